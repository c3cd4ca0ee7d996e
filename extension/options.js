// Options page loader: rendered by ext-shell's mount_options().
import init, { mount_options } from './pkg/ext_shell.js';

init()
  .then(() => mount_options())
  .catch((error) => {
    document.getElementById('app').textContent = chrome.i18n.getMessage('pageLoadFailed', [String(error)]);
  });
