//! The small floating-point formats (8 bits and fewer) of the zarr-extensions registry and
//! ml_dtypes: how each code decodes, and exact rounding of a decimal to the nearest code.

use std::cmp::Ordering;

/// A floating-point format of at most 8 bits, stored one element per byte (low bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MiniFloat {
    /// `float8_e4m3`: IEEE-like (infinities and NaNs), bias 7.
    E4M3,
    /// `float8_e4m3fn`: bias 7, no infinities; NaN is all ones.
    E4M3FN,
    /// `float8_e3m4`: IEEE-like, bias 3.
    E3M4,
    /// `float8_e5m2`: IEEE-like, bias 15.
    E5M2,
    /// `float8_e4m3fnuz`: bias 8, no infinities, no negative zero; NaN is `0x80`.
    E4M3FNUZ,
    /// `float8_e5m2fnuz`: bias 16, no infinities, no negative zero; NaN is `0x80`.
    E5M2FNUZ,
    /// `float8_e4m3b11fnuz`: bias 11, no infinities, no negative zero; NaN is `0x80`.
    E4M3B11FNUZ,
    /// `float8_e8m0fnu`: unsigned powers of two, 2^(code - 127); NaN is `0xff`; no zero.
    E8M0FNU,
    /// `float6_e2m3fn`: bias 1, no infinities, no NaN.
    F6E2M3FN,
    /// `float6_e3m2fn`: bias 3, no infinities, no NaN.
    F6E3M2FN,
    /// `float4_e2m1fn`: bias 1, no infinities, no NaN.
    F4E2M1FN,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Special {
    /// Exponent all ones: infinity (mantissa 0) or NaN.
    Ieee,
    /// Exponent and mantissa all ones: NaN; no infinity.
    Fn,
    /// `0x80` is NaN; no infinity, no negative zero.
    Fnuz,
    /// No infinity and no NaN.
    None,
}

impl MiniFloat {
    pub(crate) const ALL: [(MiniFloat, &'static str); 11] = [
        (Self::E4M3, "float8_e4m3"),
        (Self::E4M3FN, "float8_e4m3fn"),
        (Self::E3M4, "float8_e3m4"),
        (Self::E5M2, "float8_e5m2"),
        (Self::E4M3FNUZ, "float8_e4m3fnuz"),
        (Self::E5M2FNUZ, "float8_e5m2fnuz"),
        (Self::E4M3B11FNUZ, "float8_e4m3b11fnuz"),
        (Self::E8M0FNU, "float8_e8m0fnu"),
        (Self::F6E2M3FN, "float6_e2m3fn"),
        (Self::F6E3M2FN, "float6_e3m2fn"),
        (Self::F4E2M1FN, "float4_e2m1fn"),
    ];

    /// The data type name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(f, _)| *f == self)
            .map_or("", |(_, n)| n)
    }

    /// The number of bits of a value: 8 for the `float8_*` formats, 6 and 4 for `float6_*`
    /// and `float4_*` (whose values sit in the low bits of a byte).
    pub fn bits(self) -> u32 {
        let (e, m, _, _) = self.layout();
        e + m + u32::from(self.signed())
    }

    /// (exponent bits, mantissa bits, bias, special values)
    fn layout(self) -> (u32, u32, i32, Special) {
        match self {
            Self::E4M3 => (4, 3, 7, Special::Ieee),
            Self::E4M3FN => (4, 3, 7, Special::Fn),
            Self::E3M4 => (3, 4, 3, Special::Ieee),
            Self::E5M2 => (5, 2, 15, Special::Ieee),
            Self::E4M3FNUZ => (4, 3, 8, Special::Fnuz),
            Self::E5M2FNUZ => (5, 2, 16, Special::Fnuz),
            Self::E4M3B11FNUZ => (4, 3, 11, Special::Fnuz),
            Self::E8M0FNU => (8, 0, 127, Special::None),
            Self::F6E2M3FN => (2, 3, 1, Special::None),
            Self::F6E3M2FN => (3, 2, 3, Special::None),
            Self::F4E2M1FN => (2, 1, 1, Special::None),
        }
    }

    fn signed(self) -> bool {
        self != Self::E8M0FNU
    }

    /// The number of codes (2^bits).
    fn codes(self) -> u16 {
        let (e, m, _, _) = self.layout();
        1 << (e + m + u32::from(self.signed()))
    }

    /// The canonical NaN code, if the format has NaN.
    pub(crate) fn nan(self) -> Option<u8> {
        match self {
            Self::E4M3 => Some(0x7c),
            Self::E3M4 => Some(0x78),
            Self::E5M2 => Some(0x7e),
            Self::E4M3FN => Some(0x7f),
            Self::E4M3FNUZ | Self::E5M2FNUZ | Self::E4M3B11FNUZ => Some(0x80),
            Self::E8M0FNU => Some(0xff),
            Self::F6E2M3FN | Self::F6E3M2FN | Self::F4E2M1FN => None,
        }
    }

    /// The code of +infinity, if the format has infinities.
    pub(crate) fn infinity(self) -> Option<u8> {
        let (e, m, _, special) = self.layout();
        (special == Special::Ieee).then(|| (((1u16 << e) - 1) << m) as u8)
    }

    /// The sign bit, for signed formats.
    pub(crate) fn sign_bit(self) -> u8 {
        let (e, m, _, _) = self.layout();
        if self.signed() { 1 << (e + m) } else { 0 }
    }

    /// The value of a stored byte, exactly (bits above the format's width are ignored; a
    /// NaN code gives `f64::NAN`).
    ///
    /// ```
    /// use zarr_core::MiniFloat;
    ///
    /// assert_eq!(MiniFloat::E4M3FN.to_f64(0x38), 1.0);
    /// assert_eq!(MiniFloat::E4M3FN.to_f64(0xfe), -448.0);
    /// assert!(MiniFloat::E4M3FN.to_f64(0x7f).is_nan());
    /// assert_eq!(MiniFloat::F4E2M1FN.to_f64(0x07), 6.0);
    /// ```
    pub fn to_f64(self, code: u8) -> f64 {
        self.decode(code)
    }

    /// The value of a code (upper bits beyond the format's width are ignored).
    pub(crate) fn decode(self, code: u8) -> f64 {
        let (e, m, bias, special) = self.layout();
        let code = u16::from(code) & (self.codes() - 1);
        if self == Self::E8M0FNU {
            return if code == 0xff {
                f64::NAN
            } else {
                2f64.powi(i32::from(code) - 127)
            };
        }
        let negative = code >> (e + m) & 1 == 1;
        let exp = (code >> m) & ((1 << e) - 1);
        let man = code & ((1 << m) - 1);
        let exp_max = (1 << e) - 1;
        let magnitude = match special {
            Special::Fnuz if code == 0x80 => return f64::NAN,
            Special::Ieee if exp == exp_max => {
                if man == 0 {
                    f64::INFINITY
                } else {
                    return f64::NAN;
                }
            }
            Special::Fn if exp == exp_max && man == (1 << m) - 1 => return f64::NAN,
            _ if exp == 0 => f64::from(man) * 2f64.powi(1 - bias - m as i32),
            _ => (1.0 + f64::from(man) / f64::from(1u16 << m)) * 2f64.powi(i32::from(exp) - bias),
        };
        if negative { -magnitude } else { magnitude }
    }

    /// The code nearest to the decimal `text` (ties to an even code), exactly, or `None` if the
    /// value is out of the format's finite range.
    pub(crate) fn round_decimal(self, text: &str) -> Option<u8> {
        let x: f64 = text.trim().parse().ok()?;
        if x == 0.0 {
            // Keep the sign of zero where the format has a negative zero.
            let negative_zero =
                x.is_sign_negative() && self.signed() && self.layout().3 != Special::Fnuz;
            if self != Self::E8M0FNU {
                return Some(if negative_zero { self.sign_bit() } else { 0 });
            }
        }
        // Finite values in ascending order (the two zeros count once).
        let mut values: Vec<(f64, u16)> = (0..self.codes())
            .map(|code| (self.decode(code as u8), code))
            .filter(|(v, _)| v.is_finite())
            .collect();
        values.sort_by(|a, b| a.0.total_cmp(&b.0));
        values.dedup_by(|a, b| a.0 == b.0);
        if let Some((_, code)) = values.iter().find(|(v, _)| *v == x) {
            return Some(*code as u8);
        }
        let first = values[0];
        let last = values[values.len() - 1];
        if x > last.0 {
            // Past the top: within half a step it rounds down to the largest value (ties to
            // even), otherwise it is out of range. The step beyond is the last step.
            let step = last.0 - values[values.len() - 2].0;
            let beyond = (last.1 + 1, last.0 + step);
            let chosen = pick(text, x, (last.1, last.0), beyond);
            return (chosen != beyond.0).then_some(chosen as u8);
        }
        if x < first.0 {
            if !self.signed() {
                // No zero and no negatives: tiny positives round up to the smallest value.
                return (x > 0.0).then_some(first.1 as u8);
            }
            let step = values[1].0 - first.0;
            let beyond = (first.1 + 1, first.0 - step);
            let chosen = pick(text, x, beyond, (first.1, first.0));
            return (chosen != beyond.0).then_some(chosen as u8);
        }
        let above = values.partition_point(|(v, _)| *v < x);
        let (lo, hi) = (values[above - 1], values[above]);
        Some(pick(text, x, (lo.1, lo.0), (hi.1, hi.0)) as u8)
    }
}

/// Choose between the neighbours `lo < x < hi` of `x` (the `f64` nearest the decimal `text`):
/// the nearer one, or at an exact midpoint the one the decimal's own digits are nearer to, or
/// the even code when the decimal is the midpoint exactly.
pub(crate) fn pick<C: Copy + Into<u64>>(text: &str, x: f64, lo: (C, f64), hi: (C, f64)) -> C {
    let midpoint = (lo.1 + hi.1) / 2.0;
    let order = if x != midpoint {
        x.partial_cmp(&midpoint).unwrap_or(Ordering::Equal)
    } else {
        // x is exactly a midpoint; the decimal may lie just beside it.
        let (negative, magnitude) = match text.trim().strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.trim()),
        };
        let by_magnitude = compare_decimal(magnitude, midpoint.abs());
        if negative {
            by_magnitude.reverse()
        } else {
            by_magnitude
        }
    };
    match order {
        Ordering::Less => lo.0,
        Ordering::Greater => hi.0,
        Ordering::Equal => {
            if lo.0.into() & 1 == 0 {
                lo.0
            } else {
                hi.0
            }
        }
    }
}

/// Split a non-negative decimal into significant digits (no leading or trailing zeros) and the
/// power of ten of the position just before the first digit: value = 0.d1d2d3… × 10^exp.
fn normalize_decimal(text: &str) -> (Vec<u8>, i64) {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i64>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: Vec<u8> = int_part.bytes().chain(frac_part.bytes()).collect();
    let mut exp = exponent.saturating_add(int_part.len() as i64);
    let leading = digits.iter().take_while(|&&d| d == b'0').count();
    digits.drain(..leading);
    exp = exp.saturating_sub(leading as i64);
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    (digits, exp)
}

/// Compare a non-negative decimal's exact value with a non-negative `f64`'s exact value.
pub(crate) fn compare_decimal(text: &str, value: f64) -> Ordering {
    let (a_digits, a_exp) = normalize_decimal(text);
    // 800 significant digits print every f64 exactly.
    let (b_digits, b_exp) = normalize_decimal(&format!("{value:.800e}"));
    match (a_digits.is_empty(), b_digits.is_empty()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a_exp.cmp(&b_exp).then_with(|| a_digits.cmp(&b_digits)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(MiniFloat::E4M3FN.decode(0x7e), 448.0);
        assert!(MiniFloat::E4M3FN.decode(0x7f).is_nan());
        assert_eq!(MiniFloat::E4M3FN.decode(0x01), 2f64.powi(-9));
        assert_eq!(MiniFloat::E4M3.decode(0x77), 240.0);
        assert_eq!(MiniFloat::E4M3.decode(0x78), f64::INFINITY);
        assert_eq!(MiniFloat::E5M2.decode(0x7b), 57344.0);
        assert_eq!(MiniFloat::E5M2.decode(0x7c), f64::INFINITY);
        assert!(MiniFloat::E5M2.decode(0x7e).is_nan());
        assert_eq!(MiniFloat::E3M4.decode(0x6f), 15.5);
        assert!(MiniFloat::E3M4.decode(0x77).is_nan());
        assert_eq!(MiniFloat::E4M3FNUZ.decode(0x7f), 240.0);
        assert!(MiniFloat::E4M3FNUZ.decode(0x80).is_nan());
        assert_eq!(MiniFloat::E5M2FNUZ.decode(0x7f), 57344.0);
        assert_eq!(MiniFloat::E4M3B11FNUZ.decode(0x7f), 30.0);
        assert_eq!(MiniFloat::E8M0FNU.decode(127), 1.0);
        assert_eq!(MiniFloat::E8M0FNU.decode(0), 2f64.powi(-127));
        assert_eq!(MiniFloat::F6E2M3FN.decode(0x1f), 7.5);
        assert_eq!(MiniFloat::F6E3M2FN.decode(0x1f), 28.0);
        assert_eq!(MiniFloat::F4E2M1FN.decode(0x7), 6.0);
        assert_eq!(MiniFloat::F4E2M1FN.decode(0xf), -6.0);
        assert_eq!(MiniFloat::F4E2M1FN.decode(0x1), 0.5);
        let bits = |f: MiniFloat| f.bits();
        assert_eq!(bits(MiniFloat::E4M3FN), 8);
        assert_eq!(bits(MiniFloat::E8M0FNU), 8);
        assert_eq!(bits(MiniFloat::F6E3M2FN), 6);
        assert_eq!(bits(MiniFloat::F4E2M1FN), 4);
    }

    #[test]
    fn rounding() {
        let f = MiniFloat::E4M3FN;
        assert_eq!(f.round_decimal("1.5"), Some(0x3c));
        assert_eq!(f.round_decimal("-1.5"), Some(0xbc));
        assert_eq!(f.round_decimal("-0.0"), Some(0x80));
        assert_eq!(f.round_decimal("0"), Some(0x00));
        // 1.0625 is the midpoint of 1.0 (0x38, even) and 1.125 (0x39): ties to even.
        assert_eq!(f.round_decimal("1.0625"), Some(0x38));
        assert_eq!(f.round_decimal("1.06250000000000000000000001"), Some(0x39));
        assert_eq!(f.round_decimal("-1.06250000000000000000000001"), Some(0xb9));
        // 1.1875: midpoint of 1.125 (0x39, odd) and 1.25 (0x3a): up.
        assert_eq!(f.round_decimal("1.1875"), Some(0x3a));
        assert_eq!(f.round_decimal("448"), Some(0x7e));
        assert_eq!(f.round_decimal("460"), Some(0x7e));
        assert_eq!(f.round_decimal("1000"), None);
        assert_eq!(f.round_decimal("-460"), Some(0xfe));
        assert_eq!(f.round_decimal("-1000"), None);
        // e4m3 (IEEE): 240 is the top; 248 is the midpoint to infinity (odd code): overflow.
        assert_eq!(MiniFloat::E4M3.round_decimal("247.9"), Some(0x77));
        assert_eq!(MiniFloat::E4M3.round_decimal("248"), None);
        assert_eq!(MiniFloat::E8M0FNU.round_decimal("0"), None);
        assert_eq!(MiniFloat::E8M0FNU.round_decimal("1e-60"), Some(0));
        assert_eq!(MiniFloat::E4M3FNUZ.round_decimal("-0.0"), Some(0x00));
        assert_eq!(MiniFloat::F4E2M1FN.round_decimal("2.4"), Some(0x4));
        assert_eq!(MiniFloat::E8M0FNU.round_decimal("3"), Some(128));
    }
}
