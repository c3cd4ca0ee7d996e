//! The companion's profile files reach the profile in force (issue 25): after every
//! `hello` the composition asks `profiles.get` and hands the answer on as
//! `CompanionProfiles`; an older companion (`unknown_method`) has no files, and a call that
//! failed otherwise keeps the last answer.

use continuity_protocol::ErrorCode;
use ext_core::continuity::{CallError, Continuity, ContinuityInput, ContinuityOutput, RuntimeAnswer, RuntimeCall};
use ext_core::sites::overrides::CompanionProfile;

/// Link up; the id of the `profiles.get` call it issued.
fn link_up(c: &mut Continuity) -> u64 {
    c.handle(0, ContinuityInput::LinkUp);
    let mut asked = None;
    while let Some(output) = c.poll() {
        if let ContinuityOutput::Request { id, call: RuntimeCall::ProfilesGet } = output {
            assert!(asked.replace(id).is_none(), "asked twice");
        }
    }
    asked.expect("profiles.get is asked after hello")
}

fn handed_on(c: &mut Continuity) -> Option<Vec<CompanionProfile>> {
    let mut files = None;
    while let Some(output) = c.poll() {
        if let ContinuityOutput::CompanionProfiles { files: got } = output {
            files = Some(got);
        }
    }
    files
}

#[test]
fn every_hello_asks_for_the_companion_profiles_and_hands_the_answer_on() {
    let mut c = Continuity::new();
    let id = link_up(&mut c);
    let file = CompanionProfile { site: "chatgpt".into(), text: Ok("{}".into()), modified_ms: 9 };
    c.handle(1, ContinuityInput::Answered { id, result: Ok(RuntimeAnswer::Profiles { files: vec![file.clone()] }) });
    assert_eq!(handed_on(&mut c), Some(vec![file]));
    // A reconnect asks again.
    c.handle(2, ContinuityInput::LinkDown);
    while c.poll().is_some() {}
    let id = link_up(&mut c);
    // An older companion: no files.
    let unknown = CallError { code: ErrorCode::UnknownMethod, message: "unknown method profiles.get".into() };
    c.handle(3, ContinuityInput::Answered { id, result: Err(unknown) });
    assert_eq!(handed_on(&mut c), Some(Vec::new()));
    // Any other failure changes nothing.
    let id = link_up(&mut c);
    let offline = CallError { code: ErrorCode::Offline, message: "gone".into() };
    c.handle(4, ContinuityInput::Answered { id, result: Err(offline) });
    assert_eq!(handed_on(&mut c), None);
}
