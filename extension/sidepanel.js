// Side panel loader: extension pages may run wasm (the extension CSP allows
// 'wasm-unsafe-eval'), so the panel is rendered by ext-shell's mount_side_panel().
import init, { mount_side_panel } from './pkg/ext_shell.js';

init()
  .then(() => mount_side_panel())
  .catch((error) => {
    document.getElementById('app').textContent = chrome.i18n.getMessage('pageLoadFailed', [String(error)]);
  });
