//! `diagnostics.report` and `herdr-companion doctor` (issue 9: "doctor prints the last
//! diagnostics the extension reported"), through the real runtime on its real socket.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::support::{output_within, LineClient, TestHome};

#[test]
fn doctor_prints_the_page_diagnostics_the_extension_reported_last() {
    let home = TestHome::new();
    let before = output_within(
        &mut home.command(&["doctor", "--browser", "chromium", "--user-data-dir", home.home().to_str().expect("utf-8")]),
        "doctor",
    );
    assert!(String::from_utf8_lossy(&before.stdout).contains("no page diagnostics yet"), "{before:?}");
    let mut runtime = home.start_runtime();
    let mut client = LineClient::connect(&home.socket());
    let report = json!({
        "page_load": "k3x9q2", "site": "chatgpt", "generation": null, "matching": [],
        "facts": {"composer": null, "send": null, "stop": "button[data-testid=\"stop-button\"]"},
        "usage": {
            "stop": {"entry": 1, "gens": ["chatgpt.classic"], "fallback": true, "count": 12},
            "turn": {"entry": 0, "gens": ["chatgpt.classic"], "fallback": false, "count": 30},
        },
        "missing": {"composer": {"elements": 200, "tags": {"div": 120, "main": 1, "form": 1}, "roles": {"log": 1}, "data_attrs": {"data-mobile-composer": 1}}},
        "csp": {"meta": true, "violations": 2, "directives": ["script-src"]},
        "deliveries": [{"id": "wake:w1#4/ab.0.0", "outcome": "not_submitted", "reason": "unknown_layout"}],
    });
    let answer = client.call("d-1", "diagnostics.report", json!({ "diagnostics": report }));
    assert_eq!(answer["result"]["type"], "diagnostics_stored", "{answer}");
    let file = home.home().join("diagnostics.json");
    assert_eq!(std::fs::metadata(&file).expect("stored").permissions().mode() & 0o777, 0o600, "private like state.db");
    // A report that is no object is refused with what to send.
    let bad = client.call("d-2", "diagnostics.report", json!({ "diagnostics": "oops" }));
    assert_eq!(bad["error"]["code"], "bad_request", "{bad}");
    let after = output_within(
        &mut home.command(&["doctor", "--browser", "chromium", "--user-data-dir", home.home().to_str().expect("utf-8")]),
        "doctor",
    );
    let text = String::from_utf8_lossy(&after.stdout);
    assert!(text.contains("last page diagnostics (chatgpt"), "{text}");
    assert!(text.contains("layout: none recognised"), "{text}");
    assert!(text.contains("facts: 1 matched, 2 without a match (composer, send)"), "{text}");
    assert!(text.contains("served by a fallback probe: stop (entry 1, 12×)"), "the fallback in use is a warning: {text}");
    assert!(!text.contains("turn (entry"), "a first probe is no warning: {text}");
    assert!(
        text.contains(
            "missing composer: looked at 200 element(s); tags div 120, form 1, main 1; roles log 1; data-* data-mobile-composer 1"
        ),
        "{text}"
    );
    assert!(text.contains("csp: meta policy present, 2 violation(s) seen"), "{text}");
    assert!(text.contains("last deliveries: not_submitted (unknown_layout)"), "{text}");
    runtime.terminate();
}
