// Records `securitypolicyviolation` events on every page of a browser context, so that a
// test can assert the extension caused none (a content script compiling wasm on a page whose
// CSP lacks 'wasm-unsafe-eval' would show up here; TOOLCHAIN.md "The extension in Chromium").
//
// The listener is installed by an init script, which Chromium injects before any page script
// and outside the page's CSP, so recording itself never causes a violation.

const RECORDER = () => {
  const violations = [];
  Object.defineProperty(window, '__securityPolicyViolations', { value: violations, enumerable: false });
  document.addEventListener(
    'securitypolicyviolation',
    (event) => {
      violations.push({
        violatedDirective: event.violatedDirective,
        effectiveDirective: event.effectiveDirective,
        blockedURI: event.blockedURI,
        sourceFile: event.sourceFile,
        lineNumber: event.lineNumber,
        sample: event.sample,
      });
    },
    true,
  );
};

export async function recordSecurityPolicyViolations(context) {
  await context.addInitScript(RECORDER);
}

/** The violations recorded on `page` so far (an array of plain objects). */
export async function securityPolicyViolations(page) {
  return page.evaluate(() => window.__securityPolicyViolations ?? []);
}
