//! Prints every built-in site profile as the flat profile (wire v2) the worker sends to a
//! page (`{"chatgpt": …, "zai": …, "deepseek": …}`); the site-profile e2e spec feeds it to the
//! real content script against recorded DOM snippets.

fn main() {
    let mut all = serde_json::Map::new();
    for profile in ext_core::sites::PROFILES {
        all.insert(profile.site.to_owned(), ext_core::sites::builtin_profile_json(profile.site));
    }
    println!("{}", serde_json::Value::Object(all));
}
