//! Parsing and writing reference sets: fsspec's JSON reference specification, versions 0
//! and 1, with version 1's templates and generators.
//!
//! Templates and generator fields are Jinja templates in fsspec. Every reference set kerchunk
//! writes uses only `{{name}}` substitutions; generators use small integer expressions such as
//! `{{(i + 1) * 1000}}`. This module evaluates that subset: names, integer and string
//! literals, `+`, `-`, `*`, `//`, `%` (with Python's rounding) and parentheses. Anything else
//! (filters, function calls, templates taking arguments) is refused with a typed error rather
//! than rendered differently from fsspec.

use std::collections::BTreeMap;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Map, Value};

use super::{Reference, References};
use crate::{Error, Result, StoreKey};

/// The most references the generators of one reference set may produce: their product of
/// dimension lengths is checked before anything is generated, so a hostile set cannot make
/// the parser allocate without bound.
pub const MAX_GENERATED_REFERENCES: u64 = 1 << 24;

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidReferences {
        reason: reason.into(),
    }
}

/// Parse a reference set from JSON text.
pub(super) fn parse(json: &[u8]) -> Result<References> {
    let value: Value = serde_json::from_slice(json)
        .map_err(|e| invalid(format!("the reference set is not valid JSON: {e}")))?;
    parse_value(&value)
}

/// Parse a reference set from a JSON value.
pub(super) fn parse_value(value: &Value) -> Result<References> {
    let Value::Object(top) = value else {
        return Err(invalid("the reference set is not a JSON object"));
    };
    let mut map = BTreeMap::new();
    match top.get("version") {
        None => {
            // Version 0: the object is the references.
            for (key, value) in top {
                insert(
                    &mut map,
                    key,
                    parse_reference(key, value, &Templates::default())?,
                );
            }
        }
        Some(version) if version.as_u64() == Some(1) => {
            for name in top.keys() {
                if !matches!(name.as_str(), "version" | "templates" | "gen" | "refs") {
                    return Err(invalid(format!(
                        "unknown member {name:?} in a version 1 reference set (expected \
                         \"templates\", \"gen\" and \"refs\")"
                    )));
                }
            }
            let templates = Templates::parse(top.get("templates"))?;
            match top.get("refs") {
                None => {}
                Some(Value::Object(refs)) => {
                    for (key, value) in refs {
                        insert(&mut map, key, parse_reference(key, value, &templates)?);
                    }
                }
                Some(_) => return Err(invalid("\"refs\" is not a JSON object")),
            }
            // Generated references replace explicit ones with the same key, as in fsspec.
            match top.get("gen") {
                None => {}
                Some(Value::Array(gens)) => {
                    let mut budget = MAX_GENERATED_REFERENCES;
                    for (i, generator) in gens.iter().enumerate() {
                        generate(generator, i, &templates, &mut budget, &mut map)?;
                    }
                }
                Some(_) => return Err(invalid("\"gen\" is not a JSON array")),
            }
        }
        Some(version) => {
            return Err(invalid(format!(
                "unknown reference set version {version} (versions 0 and 1 are supported)"
            )));
        }
    }
    Ok(References { map })
}

fn insert(map: &mut BTreeMap<StoreKey, Reference>, key: &str, reference: (StoreKey, Reference)) {
    debug_assert_eq!(reference.0.as_str(), key);
    map.insert(reference.0, reference.1);
}

fn store_key(key: &str) -> Result<StoreKey> {
    StoreKey::try_new(key).map_err(|e| invalid(format!("reference key {key:?}: {e}")))
}

/// One entry of `refs` (or of a version 0 set).
fn parse_reference(
    key: &str,
    value: &Value,
    templates: &Templates,
) -> Result<(StoreKey, Reference)> {
    let store_key = store_key(key)?;
    let reference = match value {
        Value::String(text) => Reference::Inline(inline_bytes(key, text)?),
        // A JSON document given as an object (fsspec stores its text).
        Value::Object(_) => Reference::Inline(Bytes::from(value.to_string())),
        Value::Array(parts) => {
            let url = match parts.first() {
                Some(Value::String(url)) => Some(templates.render_url(key, url)?),
                Some(Value::Null) => None,
                _ => {
                    return Err(invalid(format!(
                        "reference {key:?}: the first item must be a URL string or null"
                    )));
                }
            };
            match parts.len() {
                1 => Reference::Whole { url },
                3 => {
                    let number = |i: usize, what: &str| {
                        parts[i].as_u64().ok_or_else(|| {
                            invalid(format!(
                                "reference {key:?}: the {what} {} is not a non-negative integer",
                                parts[i]
                            ))
                        })
                    };
                    let offset = number(1, "offset")?;
                    let length = number(2, "length")?;
                    range_reference(key, url, offset, length)?
                }
                n => {
                    return Err(invalid(format!(
                        "reference {key:?} has {n} items: expected [url] or [url, offset, length]"
                    )));
                }
            }
        }
        other => {
            return Err(invalid(format!(
                "reference {key:?} is {other}: expected a string, an object or a list"
            )));
        }
    };
    Ok((store_key, reference))
}

fn range_reference(key: &str, url: Option<String>, offset: u64, length: u64) -> Result<Reference> {
    if offset.checked_add(length).is_none() {
        return Err(invalid(format!(
            "reference {key:?}: offset {offset} plus length {length} overflows"
        )));
    }
    Ok(Reference::Range {
        url,
        offset,
        length,
    })
}

/// The bytes of an inline value: base64 after a `base64:` prefix, else the text's UTF-8.
fn inline_bytes(key: &str, text: &str) -> Result<Bytes> {
    match text.strip_prefix("base64:") {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map(Bytes::from)
            .map_err(|e| invalid(format!("reference {key:?}: invalid base64 data: {e}"))),
        None => Ok(Bytes::copy_from_slice(text.as_bytes())),
    }
}

/// Version 1 templates: names for strings, substituted into URLs and generator fields.
#[derive(Default)]
struct Templates(BTreeMap<String, String>);

impl Templates {
    fn parse(value: Option<&Value>) -> Result<Self> {
        let mut templates = BTreeMap::new();
        match value {
            None => {}
            Some(Value::Object(map)) => {
                for (name, value) in map {
                    let Value::String(text) = value else {
                        return Err(invalid(format!("template {name:?} is not a string")));
                    };
                    if text.contains("{{") {
                        return Err(invalid(format!(
                            "template {name:?} is itself a Jinja template ({text:?}); templates \
                             taking arguments are not supported"
                        )));
                    }
                    if !is_name(name) {
                        return Err(invalid(format!("template name {name:?} is not a name")));
                    }
                    templates.insert(name.clone(), text.clone());
                }
            }
            Some(_) => return Err(invalid("\"templates\" is not a JSON object")),
        }
        Ok(Self(templates))
    }

    fn render_url(&self, key: &str, url: &str) -> Result<String> {
        if !url.contains("{{") {
            return Ok(url.to_owned());
        }
        render(url, &|name| self.0.get(name).cloned().map(Datum::Str))
            .map_err(|reason| invalid(format!("reference {key:?}: URL {url:?}: {reason}")))
    }
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One `gen` entry: references for every combination of its dimensions' values.
fn generate(
    generator: &Value,
    index: usize,
    templates: &Templates,
    budget: &mut u64,
    map: &mut BTreeMap<StoreKey, Reference>,
) -> Result<()> {
    let what = |reason: String| invalid(format!("generator {index}: {reason}"));
    let Value::Object(generator) = generator else {
        return Err(what("not a JSON object".into()));
    };
    let field = |name: &str| -> Result<Option<&str>> {
        match generator.get(name) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(what(format!(
                "{name:?} is {other}, not a string (a template)"
            ))),
        }
    };
    for name in generator.keys() {
        if !matches!(
            name.as_str(),
            "key" | "url" | "offset" | "length" | "dimensions"
        ) {
            return Err(what(format!("unknown member {name:?}")));
        }
    }
    let key = field("key")?.ok_or_else(|| what("no \"key\"".into()))?;
    let url = field("url")?.ok_or_else(|| what("no \"url\"".into()))?;
    let offset = field("offset")?;
    let length = field("length")?;
    if offset.is_some() != length.is_some() {
        return Err(what(
            "has only one of \"offset\" and \"length\" (give both or neither)".into(),
        ));
    }
    let dimensions = dimensions(generator.get("dimensions"), index)?;
    let count = dimensions
        .iter()
        .try_fold(1_u64, |n, (_, values)| n.checked_mul(values.len() as u64));
    match count {
        Some(count) if count <= *budget => *budget -= count,
        _ => {
            return Err(what(format!(
                "generates more than {MAX_GENERATED_REFERENCES} references"
            )));
        }
    }
    let mut at = vec![0_usize; dimensions.len()];
    if dimensions.iter().any(|(_, values)| values.is_empty()) {
        return Ok(());
    }
    loop {
        let lookup = |name: &str| -> Option<Datum> {
            dimensions
                .iter()
                .zip(&at)
                .find(|((dim, _), _)| dim == name)
                .map(|((_, values), &i)| values[i].clone())
                .or_else(|| templates.0.get(name).cloned().map(Datum::Str))
        };
        let render_field = |name: &str, template: &str| {
            render(template, &lookup)
                .map_err(|reason| what(format!("{name} {template:?}: {reason}")))
        };
        let key_text = render_field("key", key)?;
        let url_text = render_field("url", url)?;
        let store_key = store_key(&key_text)?;
        let reference = match (offset, length) {
            (Some(offset), Some(length)) => {
                let number = |name: &str, template: &str| -> Result<u64> {
                    let text = render_field(name, template)?;
                    text.trim().parse::<u64>().map_err(|_| {
                        what(format!(
                            "{name} {template:?} renders as {text:?}, not a non-negative integer"
                        ))
                    })
                };
                let offset = number("offset", offset)?;
                let length = number("length", length)?;
                range_reference(&key_text, Some(url_text), offset, length)?
            }
            _ => Reference::Whole {
                url: Some(url_text),
            },
        };
        map.insert(store_key, reference);
        // The next combination, the last dimension fastest (as `itertools.product`).
        let mut d = dimensions.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            at[d] += 1;
            if at[d] < dimensions[d].1.len() {
                break;
            }
            at[d] = 0;
        }
    }
}

/// A generator's dimensions, in order: a list of values, or `{"start", "stop", "step"}` as
/// Python's `range`.
fn dimensions(value: Option<&Value>, index: usize) -> Result<Vec<(String, Vec<Datum>)>> {
    let what = |reason: String| invalid(format!("generator {index}: {reason}"));
    let Some(Value::Object(dims)) = value else {
        return Err(what("no \"dimensions\" object".into()));
    };
    let mut out = Vec::with_capacity(dims.len());
    for (name, spec) in dims {
        if !is_name(name) {
            return Err(what(format!("dimension name {name:?} is not a name")));
        }
        let values = match spec {
            Value::Array(items) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(Datum::Str(s.clone())),
                    Value::Number(n) => n.as_i64().map(Datum::Int).ok_or_else(|| {
                        what(format!("dimension {name:?}: value {n} is not an integer"))
                    }),
                    other => Err(what(format!(
                        "dimension {name:?}: value {other} is not a string or an integer"
                    ))),
                })
                .collect::<Result<Vec<_>>>()?,
            Value::Object(range) => python_range(name, range).map_err(what)?,
            other => {
                return Err(what(format!(
                    "dimension {name:?} is {other}: expected a list or {{\"start\", \"stop\", \
                     \"step\"}}"
                )));
            }
        };
        out.push((name.clone(), values));
    }
    Ok(out)
}

fn python_range(name: &str, range: &Map<String, Value>) -> std::result::Result<Vec<Datum>, String> {
    for member in range.keys() {
        if !matches!(member.as_str(), "start" | "stop" | "step") {
            return Err(format!("dimension {name:?}: unknown member {member:?}"));
        }
    }
    let int = |member: &str, default: Option<i64>| -> std::result::Result<i64, String> {
        match range.get(member) {
            None => default.ok_or_else(|| format!("dimension {name:?} has no \"{member}\"")),
            Some(v) => v
                .as_i64()
                .ok_or_else(|| format!("dimension {name:?}: \"{member}\" {v} is not an integer")),
        }
    };
    let start = int("start", Some(0))?;
    let stop = int("stop", None)?;
    let step = int("step", Some(1))?;
    if step == 0 {
        return Err(format!("dimension {name:?} has step 0"));
    }
    // The length as Python computes it, before anything is allocated.
    let span = if step > 0 {
        i128::from(stop) - i128::from(start)
    } else {
        i128::from(start) - i128::from(stop)
    };
    let step_abs = i128::from(step).abs();
    let len = if span <= 0 {
        0
    } else {
        (span + step_abs - 1) / step_abs
    };
    if len > i128::from(MAX_GENERATED_REFERENCES) {
        return Err(format!(
            "dimension {name:?} has more than {MAX_GENERATED_REFERENCES} values"
        ));
    }
    // Each value lies between start and stop, so it fits in an i64; the product is taken in
    // i128, where it cannot overflow (len < 2^25, |step| < 2^64).
    Ok((0..len)
        .map(|i| Datum::Int((i128::from(start) + i * i128::from(step)) as i64))
        .collect())
}

/// A value in a template expression.
#[derive(Clone, Debug, PartialEq)]
enum Datum {
    Int(i64),
    Str(String),
}

impl Datum {
    fn render(&self) -> String {
        match self {
            Self::Int(n) => n.to_string(),
            Self::Str(s) => s.clone(),
        }
    }
}

/// Replace each `{{ expression }}` in `template` by its value.
fn render(
    template: &str,
    lookup: &dyn Fn(&str) -> Option<Datum>,
) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| "a \"{{\" without its \"}}\"".to_owned())?;
        let value = Parser::new(&after[..close], lookup).expression_to_end()?;
        out.push_str(&value.render());
        rest = &after[close + 2..];
    }
    if rest.contains("}}") {
        return Err("a \"}}\" without its \"{{\"".to_owned());
    }
    if rest.contains("{%") || rest.contains("{#") {
        return Err("Jinja statements and comments are not supported".to_owned());
    }
    out.push_str(rest);
    Ok(out)
}

/// A recursive-descent parser and evaluator of the expression subset.
struct Parser<'a> {
    text: &'a str,
    at: usize,
    lookup: &'a dyn Fn(&str) -> Option<Datum>,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, lookup: &'a dyn Fn(&str) -> Option<Datum>) -> Self {
        Self {
            text,
            at: 0,
            lookup,
            depth: 0,
        }
    }

    fn expression_to_end(mut self) -> std::result::Result<Datum, String> {
        let value = self.sum()?;
        self.skip_space();
        if self.at < self.text.len() {
            return Err(format!(
                "cannot evaluate {:?}: unsupported syntax at {:?} (names, integers, strings, \
                 + - * // % and parentheses are supported)",
                self.text.trim(),
                &self.text[self.at..]
            ));
        }
        Ok(value)
    }

    fn skip_space(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        if self.text[self.at..].starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn sum(&mut self) -> std::result::Result<Datum, String> {
        let mut value = self.product()?;
        loop {
            if self.eat("+") {
                let rhs = self.product()?;
                value = match (value, rhs) {
                    (Datum::Int(a), Datum::Int(b)) => Datum::Int(checked(a.checked_add(b))?),
                    (Datum::Str(a), Datum::Str(b)) => Datum::Str(a + &b),
                    _ => return Err("cannot add a string and an integer".to_owned()),
                };
            } else if self.eat("-") {
                let (a, b) = ints(value, self.product()?, "-")?;
                value = Datum::Int(checked(a.checked_sub(b))?);
            } else {
                return Ok(value);
            }
        }
    }

    fn product(&mut self) -> std::result::Result<Datum, String> {
        let mut value = self.unary()?;
        loop {
            if self.eat("**") {
                return Err("the power operator is not supported".to_owned());
            } else if self.eat("*") {
                let (a, b) = ints(value, self.unary()?, "*")?;
                value = Datum::Int(checked(a.checked_mul(b))?);
            } else if self.eat("//") {
                let (a, b) = ints(value, self.unary()?, "//")?;
                if b == 0 {
                    return Err("division by zero".to_owned());
                }
                value = Datum::Int(floor_div(a, b)?);
            } else if self.eat("/") {
                return Err("true division is not supported (use //)".to_owned());
            } else if self.eat("%") {
                let (a, b) = ints(value, self.unary()?, "%")?;
                if b == 0 {
                    return Err("modulo by zero".to_owned());
                }
                let q = floor_div(a, b)?;
                value = Datum::Int(checked(q.checked_mul(b).and_then(|m| a.checked_sub(m)))?);
            } else {
                return Ok(value);
            }
        }
    }

    fn unary(&mut self) -> std::result::Result<Datum, String> {
        if self.eat("-") {
            match self.unary()? {
                Datum::Int(n) => Ok(Datum::Int(checked(n.checked_neg())?)),
                Datum::Str(_) => Err("cannot negate a string".to_owned()),
            }
        } else if self.eat("+") {
            match self.unary()? {
                Datum::Int(n) => Ok(Datum::Int(n)),
                Datum::Str(_) => Err("cannot apply unary + to a string".to_owned()),
            }
        } else {
            self.atom()
        }
    }

    fn atom(&mut self) -> std::result::Result<Datum, String> {
        self.skip_space();
        let rest = &self.text[self.at..];
        let Some(first) = rest.chars().next() else {
            return Err(format!(
                "{:?} ends where a value is expected",
                self.text.trim()
            ));
        };
        if first == '(' {
            self.depth += 1;
            if self.depth > 64 {
                return Err("parentheses nest too deeply".to_owned());
            }
            self.at += 1;
            let value = self.sum()?;
            if !self.eat(")") {
                return Err(format!(
                    "a \"(\" without its \")\" in {:?}",
                    self.text.trim()
                ));
            }
            self.depth -= 1;
            return Ok(value);
        }
        if first.is_ascii_digit() {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            self.at += digits;
            return rest[..digits]
                .parse::<i64>()
                .map(Datum::Int)
                .map_err(|_| format!("the integer {} is too large", &rest[..digits]));
        }
        if first == '\'' || first == '"' {
            let end = rest[1..]
                .find(first)
                .ok_or_else(|| format!("an unterminated string in {:?}", self.text.trim()))?;
            let text = &rest[1..=end];
            if text.contains('\\') {
                return Err("escapes in strings are not supported".to_owned());
            }
            self.at += end + 2;
            return Ok(Datum::Str(text.to_owned()));
        }
        if first.is_ascii_alphabetic() || first == '_' {
            let len = rest.len()
                - rest
                    .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
                    .len();
            let name = &rest[..len];
            self.at += len;
            self.skip_space();
            if self.text[self.at..].starts_with(['(', '.', '[', '|']) {
                return Err(format!(
                    "calls, attributes, indexing and filters ({name:?} followed by {:?}) are \
                     not supported",
                    &self.text[self.at..self.at + 1]
                ));
            }
            return (self.lookup)(name).ok_or_else(|| format!("unknown name {name:?}"));
        }
        Err(format!(
            "unexpected {first:?} in {:?} (names, integers, strings, + - * // % and \
             parentheses are supported)",
            self.text.trim()
        ))
    }
}

fn checked(value: Option<i64>) -> std::result::Result<i64, String> {
    value.ok_or_else(|| "integer overflow".to_owned())
}

fn ints(a: Datum, b: Datum, op: &str) -> std::result::Result<(i64, i64), String> {
    match (a, b) {
        (Datum::Int(a), Datum::Int(b)) => Ok((a, b)),
        _ => Err(format!("{op} needs two integers")),
    }
}

/// Python's `a // b`: the quotient rounded toward negative infinity.
fn floor_div(a: i64, b: i64) -> std::result::Result<i64, String> {
    let q = checked(a.checked_div(b))?;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        checked(q.checked_sub(1))
    } else {
        Ok(q)
    }
}

/// A version 1 reference set as JSON: inline values as text when they are printable ASCII
/// (as kerchunk writes them), otherwise base64.
pub(super) fn to_json(references: &References) -> Value {
    let mut refs = Map::with_capacity(references.map.len());
    for (key, reference) in &references.map {
        let value = match reference {
            Reference::Inline(bytes) => {
                let text = std::str::from_utf8(bytes).ok().filter(|text| {
                    !text.starts_with("base64:")
                        && text
                            .chars()
                            .all(|c| c.is_ascii() && (!c.is_control() || c == '\n'))
                });
                match text {
                    Some(text) => Value::String(text.to_owned()),
                    None => Value::String(format!(
                        "base64:{}",
                        base64::engine::general_purpose::STANDARD.encode(bytes)
                    )),
                }
            }
            Reference::Whole { url } => Value::Array(vec![url_value(url)]),
            Reference::Range {
                url,
                offset,
                length,
            } => Value::Array(vec![
                url_value(url),
                Value::from(*offset),
                Value::from(*length),
            ]),
        };
        refs.insert(key.as_str().to_owned(), value);
    }
    let mut top = Map::new();
    top.insert("version".into(), Value::from(1));
    top.insert("refs".into(), Value::Object(refs));
    Value::Object(top)
}

fn url_value(url: &Option<String>) -> Value {
    url.as_ref()
        .map_or(Value::Null, |url| Value::String(url.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str) -> std::result::Result<String, String> {
        render(text, &|name| match name {
            "i" => Some(Datum::Int(3)),
            "n" => Some(Datum::Int(-7)),
            "u" => Some(Datum::Str("host/path".into())),
            _ => None,
        })
    }

    #[test]
    fn expressions_follow_python() {
        assert_eq!(eval("{{(i + 1) * 1000}}").unwrap(), "4000");
        assert_eq!(eval("x{{ i }}y{{u}}").unwrap(), "x3yhost/path");
        assert_eq!(
            eval("{{ n // 2 }} {{ n % 2 }} {{ 7 // -2 }} {{ 7 % -2 }}").unwrap(),
            "-4 1 -4 -1"
        );
        assert_eq!(eval("{{ -i - -2 }}").unwrap(), "-1");
        assert_eq!(eval("{{ u + '_' + \"x\" }}").unwrap(), "host/path_x");
        assert_eq!(eval("{{ 2 + 3 * 4 - 10 // 3 }}").unwrap(), "11");
        assert_eq!(eval("no braces").unwrap(), "no braces");
    }

    #[test]
    fn ranges_spanning_all_of_i64_generate_without_overflow() {
        let range: Map<String, Value> = serde_json::from_str(&format!(
            "{{\"start\": {}, \"stop\": {}, \"step\": {}}}",
            i64::MIN + 1,
            i64::MAX,
            1_i64 << 62
        ))
        .unwrap();
        let values = python_range("i", &range).unwrap();
        let expected: Vec<Datum> = (0..4_i128)
            .map(|i| Datum::Int((i128::from(i64::MIN + 1) + i * (1 << 62)) as i64))
            .collect();
        assert_eq!(values, expected);
        let down: Map<String, Value> = serde_json::from_str(&format!(
            "{{\"start\": {}, \"stop\": {}, \"step\": {}}}",
            i64::MAX,
            i64::MIN,
            i64::MIN
        ))
        .unwrap();
        assert_eq!(
            python_range("i", &down).unwrap(),
            [Datum::Int(i64::MAX), Datum::Int(-1)]
        );
    }

    #[test]
    fn unsupported_expressions_are_refused() {
        for bad in [
            "{{ f(c='x') }}",
            "{{ u|upper }}",
            "{{ u.x }}",
            "{{ i / 2 }}",
            "{{ i ** 2 }}",
            "{{ missing }}",
            "{{ i + u }}",
            "{{ i // 0 }}",
            "{{ 9223372036854775807 + 1 }}",
            "{{ (i }}",
            "{{ i",
            "i }}",
            "{% if i %}x{% endif %}",
            "{{ 'a\\'b' }}",
            "{{ }}",
        ] {
            assert!(eval(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn rendering_arbitrary_text_never_panics(text in "\\PC{0,40}") {
            let _ = eval(&format!("{{{{{text}}}}}"));
            let _ = eval(&text);
        }

        #[test]
        fn floor_division_and_modulo_are_pythons(a in -10_000_i64..10_000, b in -60_i64..60) {
            proptest::prop_assume!(b != 0);
            let q: i64 = eval(&format!("{{{{ {a} // ({b}) }}}}")).unwrap().parse().unwrap();
            let r: i64 = eval(&format!("{{{{ {a} % ({b}) }}}}")).unwrap().parse().unwrap();
            // Python: a == q * b + r, r has the sign of b, and |r| < |b|.
            proptest::prop_assert_eq!(q * b + r, a);
            proptest::prop_assert!(r == 0 || (r < 0) == (b < 0));
            proptest::prop_assert!(r.abs() < b.abs());
        }

        #[test]
        fn arbitrary_json_never_panics(json in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = parse(&json);
        }
    }
}
