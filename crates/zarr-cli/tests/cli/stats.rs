//! `zarr stats`: summary statistics, checked against values computed here.

use std::path::Path;

use serde_json::Value;

use crate::common::{fails, ok, write_npy};

/// The values of the float32 test array (37 x 23): rows 0..30 written, every 13th element
/// NaN; rows 30..37 unwritten (fill value 4). The least value is at [5, 3] and [2, 15],
/// the greatest at [6, 1] and [1, 21]: with parts of one 10 x 10 chunk, the second of each
/// pair comes in a later part but first in C order.
fn float_values() -> Vec<f32> {
    (0..37 * 23)
        .map(|i| match i {
            118 | 61 => -100.0,
            139 | 44 => 100.0,
            _ if i >= 30 * 23 => 4.0,
            _ if i % 13 == 0 => f32::NAN,
            _ => ((i * 37) % 101) as f32 / 4.0 - 12.0,
        })
        .collect()
}

fn float_array(dir: &Path) -> String {
    let array = dir.join("f.zarr").display().to_string();
    ok(&[
        "create",
        &array,
        "--shape",
        "37,23",
        "--dtype",
        "float32",
        "--chunks",
        "10,10",
        "--fill-value",
        "4",
    ]);
    let values = float_values();
    let bytes: Vec<u8> = values[..30 * 23]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let npy = dir.join("f.npy");
    write_npy(&npy, "<f4", &[30, 23], &bytes);
    ok(&["put", &array, "-i", npy.to_str().unwrap(), "-r", "0:30"]);
    array
}

/// What `zarr stats --json` must say of the elements at `indices` (C order) of an array of
/// `width` columns holding `values`.
struct Expected {
    min: (f64, Vec<u64>),
    max: (f64, Vec<u64>),
    mean: f64,
    std: f64,
    nan: u64,
    fill: u64,
    elements: u64,
}

fn expected(values: &[f32], width: u64, indices: &[u64], fill: f32) -> Expected {
    let at = |i: u64| vec![i / width, i % width];
    let mut min: Option<(f32, u64)> = None;
    let mut max: Option<(f32, u64)> = None;
    let (mut nan, mut fills) = (0, 0);
    let mut kept = Vec::new();
    for &i in indices {
        let v = values[i as usize];
        if v.to_bits() == fill.to_bits() {
            fills += 1;
        }
        if v.is_nan() {
            nan += 1;
            continue;
        }
        kept.push(f64::from(v));
        // The first in C order where several are equal.
        if min.is_none_or(|(m, _)| v < m) {
            min = Some((v, i));
        }
        if max.is_none_or(|(m, _)| v > m) {
            max = Some((v, i));
        }
    }
    let mean = kept.iter().sum::<f64>() / kept.len() as f64;
    let var = kept.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / kept.len() as f64;
    let (min, max) = (min.unwrap(), max.unwrap());
    Expected {
        min: (f64::from(min.0), at(min.1)),
        max: (f64::from(max.0), at(max.1)),
        mean,
        std: var.sqrt(),
        nan,
        fill: fills,
        elements: indices.len() as u64,
    }
}

fn check(got: &Value, want: &Expected) {
    let index = |v: &Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    assert_eq!(got["elements"], want.elements, "{got}");
    assert_eq!(got["nan"], want.nan, "{got}");
    assert_eq!(got["fill"], want.fill, "{got}");
    assert_eq!(got["min"]["value"].as_f64().unwrap(), want.min.0, "{got}");
    assert_eq!(index(&got["min"]["index"]), want.min.1, "{got}");
    assert_eq!(got["max"]["value"].as_f64().unwrap(), want.max.0, "{got}");
    assert_eq!(index(&got["max"]["index"]), want.max.1, "{got}");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
    assert!(close(got["mean"].as_f64().unwrap(), want.mean), "{got}");
    assert!(close(got["std"].as_f64().unwrap(), want.std), "{got}");
}

fn stats_json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(&[&["stats", "--json"][..], args].concat())).unwrap()
}

#[test]
fn stats_of_a_whole_array_in_parts_of_any_size() {
    let dir = tempfile::tempdir().unwrap();
    let array = float_array(dir.path());
    let values = float_values();
    let all: Vec<u64> = (0..37 * 23).collect();
    let want = expected(&values, 23, &all, 4.0);
    assert_eq!(
        (want.min.1.clone(), want.max.1.clone()),
        (vec![2, 15], vec![1, 21])
    );
    // Parts of a row of chunks, of one chunk (rows cut along the second dimension, so
    // ties between parts are settled by index), and all at once.
    for size in ["1K", "400", "1", "64M"] {
        check(&stats_json(&[&array, "--part-size", size]), &want);
    }
    let text = ok(&["stats", &array]);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_owned()
    };
    assert_eq!(line("elements"), "elements  851 (float32 37x23)");
    assert_eq!(
        line("min"),
        format!("min       {:?} at {:?}", want.min.0, want.min.1)
    );
    assert_eq!(line("NaN"), format!("NaN       {}", want.nan));
    assert_eq!(
        line("fill"),
        format!("fill      {} equal to the fill value 4.0", want.fill)
    );
}

#[test]
fn stats_of_a_region_name_indices_in_the_array() {
    let dir = tempfile::tempdir().unwrap();
    let array = float_array(dir.path());
    let values = float_values();
    // Rows 1, 4, ..., 34 and every other column.
    let indices: Vec<u64> = (1..37)
        .step_by(3)
        .flat_map(|y| (0..23).step_by(2).map(move |x| y * 23 + x))
        .collect();
    let want = expected(&values, 23, &indices, 4.0);
    for size in ["400", "64M"] {
        let got = stats_json(&[&array, "-r", "1::3,::2", "--part-size", size]);
        check(&got, &want);
        assert_eq!(got["shape"], serde_json::json!([12, 12]));
    }
    let rows: Vec<u64> = (5 * 23..6 * 23).collect();
    check(
        &stats_json(&[&array, "-r", "5"]),
        &expected(&values, 23, &rows, 4.0),
    );
    // An empty region: no extremes, no mean.
    let got = stats_json(&[&array, "-r", "5:5"]);
    assert_eq!(got["elements"], 0);
    assert!(got["min"].is_null() && got["mean"].is_null() && got["std"].is_null());
}

#[test]
fn stats_of_integers_and_what_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("i.zarr").display().to_string();
    ok(&[
        "create", &array, "--shape", "40", "--dtype", "int16", "--chunks", "7",
    ]);
    let values: Vec<i16> = (0..40).map(|i| (i * 7919 % 601) as i16 - 300).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let npy = dir.path().join("i.npy");
    write_npy(&npy, "<i2", &[40], &bytes);
    ok(&["put", &array, "-i", npy.to_str().unwrap()]);
    let got = stats_json(&[&array, "--part-size", "16"]);
    let (least, greatest) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
    assert_eq!(got["min"]["value"], i64::from(least), "{got}");
    let first = values.iter().position(|&v| v == least).unwrap();
    assert_eq!(got["min"]["index"], serde_json::json!([first]), "{got}");
    assert_eq!(got["max"]["value"], i64::from(greatest), "{got}");
    let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / 40.0;
    assert!(
        (got["mean"].as_f64().unwrap() - mean).abs() < 1e-12,
        "{got}"
    );
    assert_eq!(got["fill"], values.iter().filter(|&&v| v == 0).count());
    assert!(!ok(&["stats", &array]).contains("NaN"));
    // Strings have no order here.
    let demo = dir.path().join("demo.zarr").display().to_string();
    ok(&["demo", &demo, "-q"]);
    let err = fails(&["stats", &format!("{demo}/labels")], 2);
    assert!(err.contains("bool, integer, float and time"), "{err}");
}

#[test]
fn stats_of_a_group_summarise_every_array_below_it() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo.zarr");
    let demo_text = demo.display().to_string();
    ok(&["demo", &demo_text, "-q"]);
    let out = ok(&["stats", &demo_text]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    // One line per array, as the array's own stats says.
    let alone = stats_json(&[&format!("{demo_text}/timeseries/temperature")]);
    assert_eq!(
        lines[2],
        format!(
            "/timeseries/temperature  float32 1000: min {:?}, max {:?}, mean {}, std {}, \
             NaN {}, fill {}",
            alone["min"]["value"].as_f64().unwrap(),
            alone["max"]["value"].as_f64().unwrap(),
            alone["mean"].as_f64().unwrap(),
            alone["std"].as_f64().unwrap(),
            alone["nan"],
            alone["fill"]
        )
    );
    assert!(
        lines[0].starts_with("/images/raw  uint16 512x512: min "),
        "{out}"
    );
    assert_eq!(
        lines[1],
        "/labels  string 4: skipped (not bool, integer, float or time)"
    );
    let doc = stats_json(&[&demo_text]);
    assert_eq!(doc["/timeseries/temperature"], alone);
    assert_eq!(doc["/labels"]["skipped"], true);
    // -r is for arrays.
    let err = fails(&["stats", &demo_text, "-r", "0"], 2);
    assert!(err.contains("is a group"), "{err}");
    // A corrupt chunk: that array is an error, the others are still summarised, exit 1.
    let chunk = std::fs::read_dir(demo.join("timeseries/temperature/c"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&chunk, b"not a chunk").unwrap();
    let out = crate::common::zarr(&["stats", &demo_text]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("/images/raw  uint16"), "{stdout}");
    assert!(
        stdout.contains("/timeseries/temperature  error: "),
        "{stdout}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("1 of 3 arrays"), "{stderr}");
}
