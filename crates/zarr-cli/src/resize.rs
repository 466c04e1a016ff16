//! `zarr resize`: change the shape of an array.

use anyhow::{Context, Result};
use clap::Args;

use crate::layout::shape_text;
use crate::progress::note;
use crate::region::parse_shape;
use crate::target::{Access, resolve};
use crate::{Global, TargetArgs, usage};

/// Arguments of `zarr resize`.
#[derive(Args, Debug)]
pub(crate) struct ResizeArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The new shape, one length per dimension: `2000,1000`. `:` keeps a dimension's length
    /// (`:,500`), and `+N` adds N to it (`+100,:`).
    #[arg(long, allow_hyphen_values = true)]
    shape: String,
}

/// The new shape from `--shape`: lengths, `:` for the current one, `+N` for N more.
fn new_shape(text: &str, current: &[u64]) -> Result<Vec<u64>> {
    let parts: Vec<&str> = if text.trim().is_empty() || text.trim() == "()" {
        Vec::new()
    } else {
        text.split(',').map(str::trim).collect()
    };
    if parts.len() != current.len() {
        usage!(
            "--shape {text}: the array has {} dimensions (shape {}), and the rank of an array \
             never changes",
            current.len(),
            shape_text(current)
        );
    }
    let mut shape = Vec::with_capacity(parts.len());
    for (d, (part, &now)) in parts.iter().zip(current).enumerate() {
        let length = if *part == ":" {
            now
        } else if let Some(more) = part.strip_prefix('+') {
            let more = parse_shape(more, "--shape", 0)?;
            match more.as_slice() {
                [more] => now.checked_add(*more).with_context(|| {
                    format!("--shape {text}: dimension {d} would overflow ({now} + {more})")
                })?,
                _ => usage!("--shape {text}: {part:?} is not +N"),
            }
        } else {
            match parse_shape(part, "--shape", 0)?.as_slice() {
                [length] => *length,
                _ => usage!("--shape {text}: {part:?} is not a length"),
            }
        };
        shape.push(length);
    }
    Ok(shape)
}

pub(crate) async fn run(args: ResizeArgs, global: Global) -> Result<()> {
    let target = resolve(&args.target, Access::Update)?;
    let mut array = target.array().await?;
    let old = array.shape().to_vec();
    let shape = new_shape(&args.shape, &old)?;
    if shape == old {
        note(
            global,
            &format!(
                "{} is already {}: nothing to do",
                target.describe(),
                shape_text(&old)
            ),
        );
        return Ok(());
    }
    array
        .resize(shape.clone())
        .await
        .with_context(|| format!("resizing {} to {}", target.describe(), shape_text(&shape)))?;
    target.finish()?;
    let shrunk = old.iter().zip(&shape).any(|(o, n)| n < o);
    note(
        global,
        &format!(
            "resized {} from {} to {}{}",
            target.describe(),
            shape_text(&old),
            shape_text(&shape),
            if shrunk {
                "; the values outside the new shape were erased (growing it again shows the \
                 fill value there)"
            } else {
                ""
            }
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_take_lengths_colons_and_increments() {
        assert_eq!(new_shape("5, :, +3", &[1, 2, 3]).unwrap(), [5, 2, 6]);
        assert_eq!(new_shape("", &[]).unwrap(), Vec::<u64>::new());
        for bad in ["5", "5,2,3,4", "x,2,3", "+x,2,3", "-1,2,3", "+1,+2,3,"] {
            assert!(new_shape(bad, &[1, 2, 3]).is_err(), "{bad}");
        }
        let overflow = new_shape(&format!("+{}", u64::MAX), &[1]).unwrap_err();
        assert!(overflow.to_string().contains("overflow"), "{overflow}");
    }
}
