//! `#[derive(ReadJson, WriteJson)]`: ext-core's JSON reader and writer of a type
//! (`ext_core::json_read`), generated from the type's definition and the `#[serde(...)]`
//! attributes it already carries, so the shape is described once, where the type is.
//!
//! A struct reads through `FieldReader`: every field into a slot (the first error kept),
//! then the value built once, with no early return per field (each `?` would drop the
//! fields read so far: that drop code was most of a reader's wasm). It writes through
//! `Object::put`; no serde visitor reaches the wasm. It runs at build time only.
//!
//! Shapes (the same JSON serde's derives read and write):
//! - a struct with named fields: an object keyed by field name. Field attributes:
//!   `default` (absent = `Default::default()`), `skip` (never read or written; its
//!   `Default`), `skip_serializing` (read, never written), `rename = "x"`,
//!   `skip_serializing_if = "path"` (not written when `path(&field)` is true).
//!   Container: `deny_unknown_fields`.
//! - an enum of unit variants without `tag`: the variant's name as a string
//!   (`rename_all = "snake_case" | "lowercase"`, variant `rename`, variant `alias` read
//!   only). `WriteJson` also gives the enum `ALL` (every variant, in order) and
//!   `wire_name()` (the variant's string, the suffix of its `_locales` keys).
//! - an enum with `tag = "t"` of unit and struct variants: an object whose field `t` names
//!   the variant, beside the variant's own fields (the field attributes above apply).
//!
//! Any other serde attribute (`flatten`, `with`, `untagged`, `content`, …) is a compile
//! error naming it: those shapes keep a hand-written reader and writer.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitStr};

/// `impl ext_core::json_read::ReadJson` from the type's definition and serde attributes.
#[proc_macro_derive(ReadJson, attributes(serde))]
pub fn derive_read_json(input: TokenStream) -> TokenStream {
    expand(input, read_impl)
}

/// `impl ext_core::json_read::WriteJson` from the type's definition and serde attributes.
#[proc_macro_derive(WriteJson, attributes(serde))]
pub fn derive_write_json(input: TokenStream) -> TokenStream {
    expand(input, write_impl)
}

fn expand(input: TokenStream, make: fn(&Shape) -> Tokens) -> TokenStream {
    let input = syn::parse_macro_input!(input as DeriveInput);
    match Shape::of(&input) {
        Ok(shape) => make(&shape).into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// A type's JSON shape, read from its definition.
struct Shape {
    name: Ident,
    generics: syn::Generics,
    kind: Kind,
}

enum Kind {
    Struct {
        fields: Vec<Field>,
        deny_unknown: bool,
    },
    /// Unit variants written as strings.
    Units(Vec<Variant>),
    /// Internally tagged: `tag` names the variant.
    Tagged {
        tag: String,
        variants: Vec<Variant>,
    },
}

struct Field {
    ident: Ident,
    /// The JSON key.
    key: String,
    default: bool,
    skip: bool,
    skip_serializing: bool,
    skip_if: Option<syn::ExprPath>,
}

struct Variant {
    ident: Ident,
    wire: String,
    aliases: Vec<String>,
    /// `None` for a unit variant.
    fields: Option<Vec<Field>>,
}

/// A container's serde attributes.
#[derive(Default)]
struct ContainerAttrs {
    rename_all: Option<String>,
    tag: Option<String>,
    deny_unknown: bool,
}

fn unsupported(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Error {
    let name = meta.path.get_ident().map_or_else(|| "this".to_owned(), Ident::to_string);
    meta.error(format!(
        "ReadJson/WriteJson do not support serde's `{name}`; write this type's reader and writer by hand (ext_core::json_read)"
    ))
}

fn string_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<String> {
    Ok(meta.value()?.parse::<LitStr>()?.value())
}

fn serde_attrs(attrs: &[Attribute], mut each: impl FnMut(&syn::meta::ParseNestedMeta<'_>) -> syn::Result<()>) -> syn::Result<()> {
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| each(&meta))?;
    }
    Ok(())
}

fn container_attrs(attrs: &[Attribute]) -> syn::Result<ContainerAttrs> {
    let mut found = ContainerAttrs::default();
    serde_attrs(attrs, |meta| {
        if meta.path.is_ident("rename_all") {
            let rule = string_value(meta)?;
            if rule != "snake_case" && rule != "lowercase" {
                return Err(meta.error("ReadJson/WriteJson know rename_all = \"snake_case\" or \"lowercase\" only"));
            }
            found.rename_all = Some(rule);
        } else if meta.path.is_ident("tag") {
            found.tag = Some(string_value(meta)?);
        } else if meta.path.is_ident("deny_unknown_fields") {
            found.deny_unknown = true;
        } else {
            return Err(unsupported(meta));
        }
        Ok(())
    })?;
    Ok(found)
}

fn field_of(field: &syn::Field) -> syn::Result<Field> {
    let ident = field.ident.clone().ok_or_else(|| syn::Error::new_spanned(field, "ReadJson/WriteJson need named fields"))?;
    let mut found = Field {
        key: ident.to_string().trim_start_matches("r#").to_owned(),
        ident,
        default: false,
        skip: false,
        skip_serializing: false,
        skip_if: None,
    };
    serde_attrs(&field.attrs, |meta| {
        if meta.path.is_ident("default") {
            if meta.input.peek(syn::Token![=]) {
                return Err(meta.error("ReadJson/WriteJson know a plain `default` only (the field type's Default)"));
            }
            found.default = true;
        } else if meta.path.is_ident("skip") {
            found.skip = true;
        } else if meta.path.is_ident("skip_serializing") {
            found.skip_serializing = true;
        } else if meta.path.is_ident("rename") {
            found.key = string_value(meta)?;
        } else if meta.path.is_ident("skip_serializing_if") {
            let path = meta.value()?.parse::<LitStr>()?;
            found.skip_if = Some(path.parse()?);
        } else {
            return Err(unsupported(meta));
        }
        Ok(())
    })?;
    Ok(found)
}

fn named_fields(fields: &Fields) -> syn::Result<Option<Vec<Field>>> {
    match fields {
        Fields::Named(named) => named.named.iter().map(field_of).collect::<syn::Result<Vec<_>>>().map(Some),
        Fields::Unit => Ok(None),
        Fields::Unnamed(unnamed) => {
            Err(syn::Error::new_spanned(unnamed, "ReadJson/WriteJson need named fields or none; write this reader and writer by hand"))
        }
    }
}

/// `SomeName` as `rename_all` spells it.
fn renamed(name: &str, rule: Option<&str>) -> String {
    match rule {
        Some("snake_case") => {
            let mut out = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_uppercase() {
                    if i > 0 {
                        out.push('_');
                    }
                    out.extend(c.to_lowercase());
                } else {
                    out.push(c);
                }
            }
            out
        }
        Some(_) => name.to_lowercase(),
        None => name.to_owned(),
    }
}

impl Shape {
    fn of(input: &DeriveInput) -> syn::Result<Self> {
        let attrs = container_attrs(&input.attrs)?;
        let kind = match &input.data {
            Data::Struct(data) => {
                if attrs.tag.is_some() || attrs.rename_all.is_some() {
                    return Err(syn::Error::new_spanned(&input.ident, "ReadJson/WriteJson: tag and rename_all are for enums"));
                }
                let fields = named_fields(&data.fields)?
                    .ok_or_else(|| syn::Error::new_spanned(&input.ident, "ReadJson/WriteJson need a struct with named fields"))?;
                Kind::Struct { fields, deny_unknown: attrs.deny_unknown }
            }
            Data::Enum(data) => {
                let mut variants = Vec::new();
                for variant in &data.variants {
                    let mut wire = renamed(&variant.ident.to_string(), attrs.rename_all.as_deref());
                    let mut aliases = Vec::new();
                    serde_attrs(&variant.attrs, |meta| {
                        if meta.path.is_ident("rename") {
                            wire = string_value(meta)?;
                        } else if meta.path.is_ident("alias") {
                            aliases.push(string_value(meta)?);
                        } else {
                            return Err(unsupported(meta));
                        }
                        Ok(())
                    })?;
                    variants.push(Variant { ident: variant.ident.clone(), wire, aliases, fields: named_fields(&variant.fields)? });
                }
                match attrs.tag {
                    Some(tag) => Kind::Tagged { tag, variants },
                    None if variants.iter().all(|v| v.fields.is_none()) => Kind::Units(variants),
                    None => {
                        return Err(syn::Error::new_spanned(
                            &input.ident,
                            "ReadJson/WriteJson: an enum with fields needs #[serde(tag = \"...\")]",
                        ))
                    }
                }
            }
            Data::Union(_) => return Err(syn::Error::new_spanned(&input.ident, "ReadJson/WriteJson do not derive for unions")),
        };
        Ok(Shape { name: input.ident.clone(), generics: input.generics.clone(), kind })
    }
}

/// The expression reading `fields` through `reader` (a mutable `FieldReader`) into
/// `constructor { .. }`: every field into a slot first, the value built once all are read,
/// and otherwise the first field's error (no early return per field, so no drop ladder).
fn read_fields(constructor: Tokens, fields: &[Field]) -> Tokens {
    let read: Vec<&Field> = fields.iter().filter(|f| !f.skip).collect();
    let slots: Vec<Ident> = read.iter().map(|f| quote::format_ident!("read_{}", f.ident)).collect();
    let reads = read.iter().zip(&slots).map(|(field, slot)| {
        let key = &field.key;
        match field.default {
            true => quote!(let #slot = reader.or_default(#key);),
            false => quote!(let #slot = reader.get(#key);),
        }
    });
    let members = fields.iter().map(|field| {
        let ident = &field.ident;
        match field.skip {
            true => quote!(#ident: ::core::default::Default::default()),
            false => {
                let slot = quote::format_ident!("read_{}", ident);
                quote!(#ident: #slot)
            }
        }
    });
    let built = quote!(#constructor { #(#members,)* });
    if slots.is_empty() {
        return quote!(Ok(#built));
    }
    quote! {{
        #(#reads)*
        match (#(#slots,)*) {
            (#(Some(#slots),)*) => Ok(#built),
            _ => Err(reader.error()),
        }
    }}
}

fn known_keys(fields: &[Field], tag: Option<&str>) -> Vec<String> {
    tag.map(str::to_owned).into_iter().chain(fields.iter().filter(|f| !f.skip).map(|f| f.key.clone())).collect()
}

/// The names a variant is read from (each variant's wire name in order, then the aliases)
/// and, per variant, the indices of its names in that table: the reader looks the string
/// up once (`json_read::variant_index`) and matches the index, not each string.
fn name_table(variants: &[Variant]) -> (Vec<&String>, Vec<Vec<usize>>) {
    let mut names: Vec<&String> = variants.iter().map(|v| &v.wire).collect();
    let mut indices: Vec<Vec<usize>> = (0..variants.len()).map(|i| vec![i]).collect();
    for (v, at) in variants.iter().zip(&mut indices) {
        for alias in &v.aliases {
            at.push(names.len());
            names.push(alias);
        }
    }
    (names, indices)
}

fn read_impl(shape: &Shape) -> Tokens {
    let name = &shape.name;
    let (impl_generics, type_generics, where_clause) = shape.generics.split_for_impl();
    let expected = format!("a known {name}");
    let body = match &shape.kind {
        Kind::Struct { fields, deny_unknown } => {
            let read = read_fields(quote!(#name), fields);
            let only = deny_unknown.then(|| {
                let keys = known_keys(fields, None);
                quote!(reader.fields().only(&[#(#keys),*])?;)
            });
            quote! {
                #[allow(unused_mut)]
                let mut reader = ::ext_core::json_read::FieldReader::of(value)?;
                #only
                #read
            }
        }
        Kind::Units(variants) => {
            let (names, indices) = name_table(variants);
            let arms = variants.iter().zip(&indices).map(|(v, at)| {
                let ident = &v.ident;
                quote!(#(#at)|* => Ok(#name::#ident),)
            });
            quote! {
                match ::ext_core::json_read::variant_index(::ext_core::json_read::variant_name(value)?, &[#(#names),*]) {
                    #(#arms)*
                    _ => Err(::ext_core::json_read::unknown_variant(#expected)),
                }
            }
        }
        Kind::Tagged { tag, variants } => {
            let (names, indices) = name_table(variants);
            let arms = variants.iter().zip(&indices).map(|(v, at)| {
                let ident = &v.ident;
                match &v.fields {
                    None => quote!(#(#at)|* => Ok(#name::#ident),),
                    Some(fields) => {
                        let read = read_fields(quote!(#name::#ident), fields);
                        quote!(#(#at)|* => #read,)
                    }
                }
            });
            quote! {
                #[allow(unused_mut)]
                let mut reader = ::ext_core::json_read::FieldReader::of(value)?;
                match ::ext_core::json_read::variant_index(reader.fields().tag(#tag)?, &[#(#names),*]) {
                    #(#arms)*
                    _ => Err(::ext_core::json_read::unknown_variant(#expected)),
                }
            }
        }
    };
    quote! {
        impl #impl_generics ::ext_core::json_read::ReadJson for #name #type_generics #where_clause {
            fn read_json(value: &::serde_json::Value) -> ::core::result::Result<Self, ::ext_core::json_read::ReadError> {
                #body
            }
        }
    }
}

/// Statements putting `fields` (bound as references named by `access`) into `object`.
fn write_fields(fields: &[Field], access: impl Fn(&Ident) -> Tokens) -> Tokens {
    let puts = fields.iter().filter(|f| !f.skip && !f.skip_serializing).map(|field| {
        let key = &field.key;
        let value = access(&field.ident);
        let put = quote!(object.put(#key, ::ext_core::json_read::WriteJson::write_json(#value)););
        match &field.skip_if {
            Some(path) => quote!(if !#path(#value) { #put }),
            None => put,
        }
    });
    quote!(#(#puts)*)
}

fn write_impl(shape: &Shape) -> Tokens {
    let name = &shape.name;
    let (impl_generics, type_generics, where_clause) = shape.generics.split_for_impl();
    let mut inherent = Tokens::new();
    let body = match &shape.kind {
        Kind::Struct { fields, .. } => {
            let puts = write_fields(fields, |ident| quote!(&self.#ident));
            quote! {
                #[allow(unused_mut)]
                let mut object = ::ext_core::json_read::Object::default();
                #puts
                object.done()
            }
        }
        Kind::Units(variants) => {
            let idents: Vec<&Ident> = variants.iter().map(|v| &v.ident).collect();
            let wires: Vec<&String> = variants.iter().map(|v| &v.wire).collect();
            inherent = quote! {
                impl #impl_generics #name #type_generics #where_clause {
                    /// Every variant, in declaration order (tests walk them: each has its texts).
                    pub const ALL: &'static [#name #type_generics] = &[#(#name::#idents),*];

                    /// The variant's wire name, also the suffix of its `_locales` keys.
                    pub fn wire_name(&self) -> &'static str {
                        match self {
                            #(#name::#idents => #wires,)*
                        }
                    }
                }
            };
            quote!(::serde_json::Value::from(self.wire_name()))
        }
        Kind::Tagged { tag, variants } => {
            let arms = variants.iter().map(|v| {
                let ident = &v.ident;
                let wire = &v.wire;
                match &v.fields {
                    None => quote!(#name::#ident => ::ext_core::json_read::Object::tagged(#tag, #wire),),
                    Some(fields) => {
                        let bound: Vec<&Ident> = fields.iter().filter(|f| !f.skip && !f.skip_serializing).map(|f| &f.ident).collect();
                        let puts = write_fields(fields, |ident| quote!(#ident));
                        quote!(#name::#ident { #(#bound,)* .. } => {
                            let mut object = ::ext_core::json_read::Object::tagged(#tag, #wire);
                            #puts
                            object
                        })
                    }
                }
            });
            quote! {
                match self {
                    #(#arms)*
                }
                .done()
            }
        }
    };
    quote! {
        #inherent
        impl #impl_generics ::ext_core::json_read::WriteJson for #name #type_generics #where_clause {
            fn write_json(&self) -> ::serde_json::Value {
                #body
            }
        }
    }
}
