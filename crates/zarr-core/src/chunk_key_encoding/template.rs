//! The `template` chunk key encoding (zarr-extensions): chunk keys from a format string such
//! as `"images/{-1}/{*:04}.jpeg"`.

use std::fmt::Write as _;

use crate::error::{Error, Result};

/// The widest zero padding a template may ask for. A `u64` has at most 20 digits; padding
/// far beyond that only makes keys long, and a huge width would make every key huge.
const MAX_WIDTH: usize = 255;

/// Which coordinate an expression names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Index {
    /// `{2}`: counted from the first dimension.
    Front(u64),
    /// `{-1}`: counted from the last dimension (1 = the last).
    Back(u64),
    /// `{*}`: every coordinate no other expression names, in order.
    Rest,
}

/// A parsed piece of the format string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Part {
    Literal(String),
    Expression { index: Index, width: usize },
}

/// A piece of the keys of one rank: literal text or one coordinate.
#[derive(Debug, Clone, Copy)]
enum Piece<'a> {
    Literal(&'a str),
    Number { dim: usize, width: usize },
}

/// The `template` chunk key encoding: a format string whose braced expressions are replaced
/// by chunk coordinates.
///
/// - `{0}`, `{1}`, ...: a coordinate counted from the first dimension; `{-1}`, `{-2}`, ...:
///   counted from the last.
/// - `{*}`: every coordinate no other expression names, in order, joined by the separator
///   (which the configuration must then give).
/// - `{1:05}`: the same, left-padded with zeros to 5 digits.
/// - `{{` and `}}`: literal braces.
///
/// The text outside the braces must not start with `/`, contain `..`, `\`, a NUL character,
/// `//` or `zarr.json`, or end with `/`. A template suits some ranks only (each coordinate
/// named exactly once, `{*}` taking at least one); [`ChunkKeyTemplate::check_rank`] says
/// which. Two coordinates must be parted by text with a character other than a digit, or
/// two chunks could share a key (`{0}{1}` gives `123` for both `[1, 23]` and `[12, 3]`):
/// such templates are refused.
///
/// ```
/// use zarr_core::{ChunkKeyEncoding, ChunkKeyTemplate};
///
/// let template = ChunkKeyTemplate::new("images/{-1}/{*:04}.jpeg", Some("_"))?;
/// let encoding = ChunkKeyEncoding::Template(template);
/// assert_eq!(encoding.encode(&[3, 12, 7]), "images/7/0003_0012.jpeg");
/// assert_eq!(encoding.decode("images/7/0003_0012.jpeg", 3), Some(vec![3, 12, 7]));
/// # Ok::<(), zarr_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChunkKeyTemplate {
    format: String,
    separator: Option<String>,
    parts: Vec<Part>,
}

impl ChunkKeyTemplate {
    /// Parse a template. `separator` joins the coordinates of `{*}`.
    ///
    /// # Errors
    /// [`Error::InvalidField`] (naming `format` or `separator`) for a malformed expression,
    /// text that cannot be part of a key, no expression, more than one `{*}`, or `{*}`
    /// without a separator.
    pub fn new(format: &str, separator: Option<&str>) -> Result<Self> {
        Self::parse(format, separator, "format", "separator")
    }

    pub(crate) fn parse(
        format: &str,
        separator: Option<&str>,
        format_field: &str,
        separator_field: &str,
    ) -> Result<Self> {
        let bad = |reason: String| Error::invalid(format_field, reason);
        let mut parts: Vec<Part> = Vec::new();
        let mut literal = String::new();
        let mut chars = format.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match c {
                '{' if chars.peek().is_some_and(|&(_, n)| n == '{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek().is_some_and(|&(_, n)| n == '}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => {
                    return Err(bad(format!(
                        "unmatched `}}` at byte {at} of {format:?} (write `}}}}` for a brace)"
                    )));
                }
                '{' => {
                    let body_start = at + 1;
                    let Some(len) = format[body_start..].find('}') else {
                        return Err(bad(format!(
                            "the expression at byte {at} of {format:?} has no closing `}}`"
                        )));
                    };
                    let body = &format[body_start..body_start + len];
                    while chars.next_if(|&(i, _)| i <= body_start + len).is_some() {}
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    let (index, width) = parse_expression(body)
                        .map_err(|reason| bad(format!("`{{{body}}}`: {reason}")))?;
                    parts.push(Part::Expression { index, width });
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }

        if format.starts_with('/') {
            return Err(bad(format!("{format:?} starts with \"/\"")));
        }
        if matches!(parts.last(), Some(Part::Literal(l)) if l.ends_with('/')) {
            return Err(bad(format!("{format:?} ends with \"/\" (a key cannot)")));
        }
        for part in &parts {
            if let Part::Literal(text) = part {
                check_text(text).map_err(|reason| bad(format!("{format:?} {reason}")))?;
            }
        }
        let expressions = parts
            .iter()
            .filter(|p| matches!(p, Part::Expression { .. }))
            .count();
        if expressions == 0 {
            return Err(bad(format!(
                "{format:?} has no braced expression such as `{{0}}` or `{{*}}`"
            )));
        }
        let rests = parts
            .iter()
            .filter(|p| {
                matches!(
                    p,
                    Part::Expression {
                        index: Index::Rest,
                        ..
                    }
                )
            })
            .count();
        if rests > 1 {
            return Err(bad(format!("{format:?} has more than one `{{*}}`")));
        }
        if let Some(separator) = separator {
            check_text(separator).map_err(|reason| {
                Error::invalid(separator_field, format!("{separator:?} {reason}"))
            })?;
        }
        // A coordinate is never empty, so a `.` segment can only be literal text: one in
        // the format, or the separator's text between two coordinates.
        let sample: String = parts
            .iter()
            .map(|part| match part {
                Part::Literal(text) => text.clone(),
                Part::Expression {
                    index: Index::Rest, ..
                } => format!("0{}0", separator.unwrap_or_default()),
                Part::Expression { .. } => "0".to_owned(),
            })
            .collect();
        if sample.split('/').any(|segment| segment == ".") {
            return Err(match separator {
                Some(separator) if format!("0{separator}0").split('/').any(|s| s == ".") => {
                    Error::invalid(
                        separator_field,
                        format!("{separator:?} makes a \".\" segment between coordinates"),
                    )
                }
                _ => bad(format!("{format:?} makes keys with a \".\" segment")),
            });
        }
        if separator.is_none() && rests == 1 {
            return Err(Error::invalid(
                separator_field,
                format!("required, since {format:?} has `{{*}}`"),
            ));
        }
        Ok(Self {
            format: format.to_owned(),
            separator: separator.map(str::to_owned),
            parts,
        })
    }

    /// The format string.
    pub fn format(&self) -> &str {
        &self.format
    }

    /// The separator between the coordinates of `{*}`, if given.
    pub fn separator(&self) -> Option<&str> {
        self.separator.as_deref()
    }

    /// Check that the template suits arrays of `rank` dimensions: every coordinate named
    /// exactly once, `{*}` taking at least one, and coordinates parted by more than digits.
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming `field` (the chunk key encoding's place in the
    /// metadata), with the reason.
    pub fn check_rank(&self, rank: usize, field: &str) -> Result<()> {
        self.pieces(rank)
            .map(drop)
            .map_err(|reason| Error::invalid(field, format!("{:?}: {reason}", self.format)))
    }

    /// The pieces of the keys of arrays of `rank` dimensions.
    fn pieces(&self, rank: usize) -> std::result::Result<Vec<Piece<'_>>, String> {
        let mut named = vec![false; rank];
        let mut explicit = 0usize;
        for part in &self.parts {
            let Part::Expression { index, .. } = part else {
                continue;
            };
            let dim = match *index {
                Index::Rest => continue,
                Index::Front(i) => usize::try_from(i).ok().filter(|&i| i < rank),
                Index::Back(i) => usize::try_from(i).ok().and_then(|i| rank.checked_sub(i)),
            };
            let Some(dim) = dim else {
                return Err(format!(
                    "an index lies outside the {rank} dimension(s) of the chunk coordinates"
                ));
            };
            if std::mem::replace(&mut named[dim], true) {
                return Err(format!("dimension {dim} is named twice"));
            }
            explicit += 1;
        }
        let has_rest = self.parts.iter().any(|p| {
            matches!(
                p,
                Part::Expression {
                    index: Index::Rest,
                    ..
                }
            )
        });
        if has_rest && explicit == rank {
            return Err(format!(
                "`{{*}}` would take none of the {rank} coordinate(s)"
            ));
        }
        if !has_rest && explicit != rank {
            return Err(format!(
                "it names {explicit} coordinate(s), not {rank}, and has no `{{*}}`"
            ));
        }

        let mut pieces = Vec::with_capacity(self.parts.len() + 2 * rank);
        for part in &self.parts {
            match part {
                Part::Literal(text) => pieces.push(Piece::Literal(text)),
                Part::Expression { index, width } => {
                    let width = *width;
                    let dims: Vec<usize> = match *index {
                        // Checked above: these convert and lie in range.
                        Index::Front(i) => vec![i as usize],
                        Index::Back(i) => vec![rank - i as usize],
                        Index::Rest => (0..rank).filter(|&d| !named[d]).collect(),
                    };
                    for (k, dim) in dims.into_iter().enumerate() {
                        if k > 0 {
                            let separator = self.separator.as_deref().unwrap_or_default();
                            if !separator.is_empty() {
                                pieces.push(Piece::Literal(separator));
                            }
                        }
                        pieces.push(Piece::Number { dim, width });
                    }
                }
            }
        }
        // Two numbers with only digits (or nothing) between them could be read two ways.
        for pair in pieces.windows(2).chain(pieces.windows(3)) {
            let ambiguous = match pair {
                [Piece::Number { .. }, Piece::Number { .. }] => true,
                [
                    Piece::Number { .. },
                    Piece::Literal(text),
                    Piece::Number { .. },
                ] => text.bytes().all(|b| b.is_ascii_digit()),
                _ => false,
            };
            if ambiguous {
                return Err(
                    "two coordinates are parted by nothing or by digits only, so \
                            different chunks could share a key"
                        .to_owned(),
                );
            }
        }
        Ok(pieces)
    }

    /// The key of the chunk at `indices`.
    ///
    /// # Panics
    /// If the template does not suit `indices.len()` dimensions
    /// ([`ChunkKeyTemplate::check_rank`]); arrays check this when their metadata is read or
    /// built.
    pub(crate) fn encode(&self, indices: &[u64]) -> String {
        let pieces = match self.pieces(indices.len()) {
            Ok(pieces) => pieces,
            Err(reason) => panic!(
                "chunk key template {:?} does not suit {} dimension(s): {reason}",
                self.format,
                indices.len()
            ),
        };
        let mut key = String::with_capacity(self.format.len() + indices.len() * 4);
        for piece in pieces {
            match piece {
                Piece::Literal(text) => key.push_str(text),
                Piece::Number { dim, width } => {
                    let _ = write!(key, "{:0width$}", indices[dim]);
                }
            }
        }
        key
    }

    /// The chunk indices of `key`, or `None` if it is not a key of this template for `rank`
    /// dimensions (including a template that does not suit `rank`).
    pub(crate) fn decode(&self, key: &str, rank: usize) -> Option<Vec<u64>> {
        let pieces = self.pieces(rank).ok()?;
        let mut indices = vec![0u64; rank];
        let bytes = key.as_bytes();
        let mut pos = 0usize;
        for (i, piece) in pieces.iter().enumerate() {
            match *piece {
                Piece::Literal(text) => {
                    if !key[pos..].starts_with(text) {
                        return None;
                    }
                    pos += text.len();
                }
                Piece::Number { dim, width } => {
                    let digits_end = pos
                        + bytes[pos..]
                            .iter()
                            .take_while(|b| b.is_ascii_digit())
                            .count();
                    // Where the number ends: the text after it starts with `j` digits and
                    // then a non-digit, which must be the first non-digit after `pos`; text
                    // of digits only comes last (two numbers never have only digits between
                    // them), so it is the key's end.
                    let end = match pieces.get(i + 1) {
                        None => digits_end,
                        Some(Piece::Literal(text)) => {
                            match text.bytes().position(|b| !b.is_ascii_digit()) {
                                Some(j) => digits_end.checked_sub(j)?,
                                None => key.len().checked_sub(text.len())?,
                            }
                        }
                        Some(Piece::Number { .. }) => return None,
                    };
                    if end <= pos || end > digits_end {
                        return None;
                    }
                    indices[dim] = parse_number(&key[pos..end], width)?;
                    pos = end;
                }
            }
        }
        (pos == key.len()).then_some(indices)
    }
}

/// Parse the inside of a brace: `*`, `3`, `-1`, optionally followed by `:0` and a width.
fn parse_expression(body: &str) -> std::result::Result<(Index, usize), String> {
    let (index_text, width) = match body.split_once(':') {
        None => (body, 0),
        Some((index_text, padding)) => {
            let digits = padding
                .strip_prefix('0')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| {
                    format!("the padding must be `0` and a width, such as `:05`, not `:{padding}`")
                })?;
            let width: usize = digits
                .parse()
                .ok()
                .filter(|&w| w <= MAX_WIDTH)
                .ok_or_else(|| format!("a width of at most {MAX_WIDTH} digits, not {digits}"))?;
            (index_text, width)
        }
    };
    let digits_only = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let index = if index_text == "*" {
        Index::Rest
    } else if let Some(back) = index_text.strip_prefix('-') {
        let n: u64 = Some(back)
            .filter(|t| digits_only(t))
            .and_then(|t| t.parse().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("a negative index must be -1 or below, not {index_text}"))?;
        Index::Back(n)
    } else {
        let n: u64 = Some(index_text)
            .filter(|t| digits_only(t))
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("expected `*` or a dimension index, found {index_text:?}"))?;
        Index::Front(n)
    };
    Ok((index, width))
}

/// Text that a key may contain, as the template extension requires of literal text.
pub(crate) fn check_text(text: &str) -> std::result::Result<(), &'static str> {
    if text.contains("..") {
        Err("contains \"..\"")
    } else if text.contains('\\') {
        Err("contains a backslash")
    } else if text.contains('\0') {
        Err("contains a NUL character")
    } else if text.contains("//") {
        Err("contains \"//\"")
    } else if text.contains("zarr.json") {
        Err("contains \"zarr.json\"")
    } else {
        Ok(())
    }
}

/// A coordinate written as `{:0width$}` would write it, or `None`.
fn parse_number(text: &str, width: usize) -> Option<u64> {
    let len = text.len();
    let canonical = len >= width.max(1) && (len <= width || text == "0" || !text.starts_with('0'));
    if !canonical {
        return None;
    }
    // Leading zeros of padding can make the text longer than `u64::MAX`'s 20 digits.
    text.trim_start_matches('0')
        .parse()
        .ok()
        .or_else(|| text.bytes().all(|b| b == b'0').then_some(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(format: &str, separator: Option<&str>) -> ChunkKeyTemplate {
        ChunkKeyTemplate::new(format, separator).unwrap()
    }

    /// The extension's `examples.tsv`, and each key read back.
    #[test]
    fn the_extension_examples() {
        for (format, separator, coords, key) in [
            ("c/{*}", "/", [11, 22, 33], "c/11/22/33"),
            ("{*}", ".", [11, 22, 33], "11.22.33"),
            ("prefix/{*}", "/", [11, 22, 33], "prefix/11/22/33"),
            ("{*}.suffix", "_", [11, 22, 33], "11_22_33.suffix"),
            ("{2}/{0}/{1}", ".", [11, 22, 33], "33/11/22"),
            ("{-1}/{*}", "/", [11, 22, 33], "33/11/22"),
            ("{*:04}", "/", [11, 22, 33], "0011/0022/0033"),
            ("{*:02}", "/", [111, 2, 33], "111/02/33"),
        ] {
            let t = template(format, Some(separator));
            assert_eq!(t.encode(&coords), key, "{format}");
            assert_eq!(t.decode(key, 3), Some(coords.to_vec()), "{format}");
        }
    }

    #[test]
    fn padding_and_digits_around_numbers() {
        let t = template("x{0:03}-1{1}7", None);
        assert_eq!(t.encode(&[5, 42]), "x005-1427");
        assert_eq!(t.decode("x005-1427", 2), Some(vec![5, 42]));
        assert_eq!(t.encode(&[12345, 0]), "x12345-107");
        assert_eq!(t.decode("x12345-107", 2), Some(vec![12345, 0]));
        // Not what the template writes: too short, a needless zero, a leading zero.
        for key in [
            "x05-1427",
            "x0005-1427",
            "x12345-1007",
            "x005-1427z",
            "x005-427",
        ] {
            assert_eq!(t.decode(key, 2), None, "{key}");
        }
        assert_eq!(t.decode("x005-1427", 3), None);
        assert_eq!(t.decode("x005-147", 2), Some(vec![5, 4]));
        // Padding wider than a u64's digits.
        let wide = template("{0:025}", None);
        assert_eq!(wide.encode(&[7]), format!("{:025}", 7));
        assert_eq!(
            wide.decode(&wide.encode(&[u64::MAX]), 1),
            Some(vec![u64::MAX])
        );
        assert_eq!(wide.decode("99999999999999999999999", 1), None);
        assert_eq!(template("{{{0}}}/{{x}}", None).encode(&[3]), "{3}/{x}");
        assert_eq!(
            template("{{{0}}}/{{x}}", None).decode("{3}/{x}", 1),
            Some(vec![3])
        );
    }

    #[test]
    fn ranks_a_template_suits() {
        let t = template("a/{-1}/{0}/{*}", Some("."));
        assert!(t.check_rank(3, "f").is_ok());
        assert!(t.check_rank(4, "f").is_ok());
        assert_eq!(t.encode(&[1, 2, 3, 4]), "a/4/1/2.3");
        for (rank, needle) in [(2, "would take none"), (1, "named twice"), (0, "outside")] {
            let err = t
                .check_rank(rank, "chunk_key_encoding")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(needle) && err.contains("chunk_key_encoding"),
                "{rank}: {err}"
            );
            assert_eq!(t.decode("a/1/1/1", rank), None);
        }
        let fixed = template("{1}_{0}", None);
        assert!(fixed.check_rank(2, "f").is_ok());
        assert!(
            fixed
                .check_rank(3, "f")
                .unwrap_err()
                .to_string()
                .contains("not 3")
        );
        for (format, separator) in [
            ("{0}{1}", None),
            ("{0}12{1}", None),
            ("{*}", Some("")),
            ("{*}", Some("00")),
        ] {
            let err = template(format, separator)
                .check_rank(2, "f")
                .unwrap_err()
                .to_string();
            assert!(err.contains("share a key"), "{format}: {err}");
        }
    }

    #[test]
    fn malformed_templates() {
        for (format, separator, needle) in [
            ("c/{0", None, "no closing"),
            ("c/0}", None, "unmatched"),
            ("c/{x}", None, "expected `*`"),
            ("c/{-0}", None, "negative index"),
            ("c/{0:5}", None, "padding"),
            ("c/{0:0}", None, "padding"),
            ("c/{0:0999}", None, "width"),
            ("c/{+1}", None, "expected"),
            ("/c/{0}", None, "starts with"),
            ("c/{0}/", None, "ends with"),
            ("a/../{0}", None, "\"..\""),
            ("a//{0}", None, "\"//\""),
            ("a\\{0}", None, "backslash"),
            ("zarr.json{0}", None, "zarr.json"),
            ("static", None, "no braced expression"),
            ("{*}/{*}", Some("/"), "more than one"),
            ("{*}", None, "required"),
            ("{*}", Some(".."), "\"..\""),
            ("./{0}", None, "\".\" segment"),
            ("c/./{0}", None, "\".\" segment"),
            ("{0}/.", None, "\".\" segment"),
            ("{*}", Some("/./"), "between coordinates"),
        ] {
            let err = ChunkKeyTemplate::new(format, separator)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(needle),
                "{format}: {err} should contain {needle}"
            );
        }
        // Dots that are part of a segment are fine.
        for (format, separator) in [("c/.{0}/{1}.", None), ("{0}/.x/{*}", Some("/."))] {
            assert!(ChunkKeyTemplate::new(format, separator).is_ok(), "{format}");
        }
    }
}
