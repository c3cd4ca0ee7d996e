//! Prints every site profile as the JSON the worker sends to a page
//! (`{"chatgpt": …, "zai": …, "deepseek": …}`); the site-profile e2e spec feeds it to the
//! real content script against recorded DOM snippets.

fn main() -> Result<(), serde_json::Error> {
    let mut all = serde_json::Map::new();
    for profile in ext_core::sites::PROFILES {
        all.insert(profile.site.to_owned(), serde_json::to_value(profile)?);
    }
    println!("{}", serde_json::Value::Object(all));
    Ok(())
}
