//! The records of the zip format (PKWARE's APPNOTE 6.3), read with every field checked and
//! written for stored (uncompressed) entries.
//!
//! Parsing works on byte slices and answers `Err(reason)`; the store turns reasons into
//! [`Error::InvalidZip`](crate::Error::InvalidZip) naming the archive. Nothing here panics on
//! any input.

/// Signature of a local file header.
pub(crate) const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
/// Signature of a central directory record.
const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
/// Signature of the end of central directory record.
const END_SIGNATURE: u32 = 0x0605_4b50;
/// Signature of the ZIP64 end of central directory record.
const ZIP64_END_SIGNATURE: u32 = 0x0606_4b50;
/// Signature of the ZIP64 end of central directory locator.
const ZIP64_LOCATOR_SIGNATURE: u32 = 0x0706_4b50;

/// Fixed part of a local file header.
pub(crate) const LOCAL_LEN: u64 = 30;
/// Fixed part of a central directory record.
const CENTRAL_LEN: usize = 46;
/// The end of central directory record without its comment.
const END_LEN: usize = 22;
/// The ZIP64 end of central directory record without extensible data.
const ZIP64_END_LEN: usize = 56;
/// The ZIP64 end of central directory locator.
const ZIP64_LOCATOR_LEN: usize = 20;
/// How many bytes at the end of an archive can hold its end records: the longest comment
/// (65,535 bytes) and all three records.
pub(crate) const MAX_TAIL: u64 = (END_LEN + 65_535 + ZIP64_LOCATOR_LEN + ZIP64_END_LEN) as u64;

/// The extra field holding ZIP64 sizes and offsets.
const ZIP64_EXTRA_ID: u16 = 0x0001;
/// A 32-bit field that says "the value is in the ZIP64 extra field".
const SATURATED_32: u32 = u32::MAX;
/// A 16-bit count that says "the value is in the ZIP64 end record".
const SATURATED_16: u16 = u16::MAX;

/// Compression method 0: stored.
pub(crate) const METHOD_STORED: u16 = 0;
/// Compression method 8: deflate.
pub(crate) const METHOD_DEFLATED: u16 = 8;
/// General purpose flag bit 0: the entry is encrypted.
pub(crate) const FLAG_ENCRYPTED: u16 = 1;
/// General purpose flag bit 11: the name is UTF-8.
const FLAG_UTF8: u16 = 1 << 11;

/// A little-endian cursor that answers `None` past the end instead of panicking.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.bytes(2)?.try_into().ok()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }
}

/// What the end records of an archive say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct End {
    /// Entries in the central directory.
    pub(crate) entries: u64,
    /// Size of the central directory in bytes.
    pub(crate) directory_size: u64,
    /// Where the central directory starts, in the file (prepended data accounted for).
    pub(crate) directory_offset: u64,
    /// Bytes before the archive proper (a self-extracting stub, say): every offset the
    /// archive records is this much smaller than the position in the file.
    pub(crate) prepended: u64,
    /// The archive comment.
    pub(crate) comment: Vec<u8>,
}

/// Find and parse the end records in `tail`, the last bytes of a file of `file_size` bytes
/// (at most [`MAX_TAIL`]; all of a shorter file).
pub(crate) fn parse_end(tail: &[u8], file_size: u64) -> Result<End, String> {
    let tail_start = file_size
        .checked_sub(tail.len() as u64)
        .ok_or("the tail read is longer than the file")?;
    // The last signature whose record and comment fit in the file (a comment may itself hold
    // the signature's bytes, so the search runs from the end).
    let at = (0..=tail.len().saturating_sub(END_LEN))
        .rev()
        .find(|&i| {
            let mut c = Cursor::new(&tail[i..]);
            c.u32() == Some(END_SIGNATURE)
                && tail.len() - i >= END_LEN
                && usize::from(u16::from_le_bytes([tail[i + 20], tail[i + 21]]))
                    <= tail.len() - i - END_LEN
        })
        .ok_or("no end of central directory record (not a zip archive, or truncated)")?;
    let mut c = Cursor::new(&tail[at..]);
    let truncated = "truncated end of central directory record";
    c.u32().ok_or(truncated)?;
    let disk = c.u16().ok_or(truncated)?;
    let directory_disk = c.u16().ok_or(truncated)?;
    let _entries_here = c.u16().ok_or(truncated)?;
    let entries = c.u16().ok_or(truncated)?;
    let size = c.u32().ok_or(truncated)?;
    let offset = c.u32().ok_or(truncated)?;
    let comment_len = c.u16().ok_or(truncated)?;
    let comment = c.bytes(usize::from(comment_len)).ok_or(truncated)?.to_vec();
    let end_position = tail_start + at as u64;

    // A ZIP64 locator right before the end record points to the ZIP64 end record, which
    // holds the full-width values.
    let locator = at
        .checked_sub(ZIP64_LOCATOR_LEN)
        .filter(|&l| Cursor::new(&tail[l..]).u32() == Some(ZIP64_LOCATOR_SIGNATURE));
    let (entries, directory_size, recorded_offset, directory_end) = match locator {
        None => {
            if disk != 0 || directory_disk != 0 {
                return Err("the archive spans several disks, which is not supported".into());
            }
            (
                u64::from(entries),
                u64::from(size),
                u64::from(offset),
                end_position,
            )
        }
        Some(l) => {
            let mut c = Cursor::new(&tail[l..]);
            let truncated = "truncated ZIP64 end of central directory locator";
            c.u32().ok_or(truncated)?;
            let record_disk = c.u32().ok_or(truncated)?;
            let _record_offset = c.u64().ok_or(truncated)?;
            let disks = c.u32().ok_or(truncated)?;
            if record_disk != 0 || disks > 1 {
                return Err("the archive spans several disks, which is not supported".into());
            }
            // The record sits right before its locator (as every writer puts it, and as
            // Python's zipfile requires); its recorded offset would not account for
            // prepended data.
            let r = l.checked_sub(ZIP64_END_LEN).ok_or(
                "the ZIP64 end of central directory record is not right before its locator",
            )?;
            let mut c = Cursor::new(&tail[r..]);
            let truncated = "truncated ZIP64 end of central directory record";
            if c.u32().ok_or(truncated)? != ZIP64_END_SIGNATURE {
                return Err(
                    "the ZIP64 end of central directory record is not right before its locator"
                        .into(),
                );
            }
            let _record_size = c.u64().ok_or(truncated)?;
            let _made_by = c.u16().ok_or(truncated)?;
            let _needed = c.u16().ok_or(truncated)?;
            let disk = c.u32().ok_or(truncated)?;
            let directory_disk = c.u32().ok_or(truncated)?;
            let _entries_here = c.u64().ok_or(truncated)?;
            let entries = c.u64().ok_or(truncated)?;
            let size = c.u64().ok_or(truncated)?;
            let offset = c.u64().ok_or(truncated)?;
            if disk != 0 || directory_disk != 0 {
                return Err("the archive spans several disks, which is not supported".into());
            }
            (entries, size, offset, tail_start + r as u64)
        }
    };
    // The directory ends where the end records begin; any difference from the recorded
    // offset is data prepended to the archive.
    let directory_offset = directory_end.checked_sub(directory_size).ok_or_else(|| {
        format!(
            "the central directory ({directory_size} bytes) is larger than the \
             {directory_end} bytes before the end records"
        )
    })?;
    let prepended = directory_offset
        .checked_sub(recorded_offset)
        .ok_or_else(|| {
            format!(
                "the central directory is recorded at byte {recorded_offset}, but its \
             {directory_size} bytes would then overlap the end records at byte {directory_end}"
            )
        })?;
    Ok(End {
        entries,
        directory_size,
        directory_offset,
        prepended,
        comment,
    })
}

/// One record of the central directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CentralEntry {
    /// The name as stored.
    pub(crate) name: Vec<u8>,
    /// General purpose flags.
    pub(crate) flags: u16,
    /// Compression method.
    pub(crate) method: u16,
    /// CRC-32 of the uncompressed data.
    pub(crate) crc32: u32,
    /// Size of the stored (compressed) data.
    pub(crate) compressed_size: u64,
    /// Size of the uncompressed data.
    pub(crate) size: u64,
    /// Offset of the local header, as recorded (without prepended data).
    pub(crate) header_offset: u64,
    /// The whole record, to be written back unchanged when the archive is rewritten.
    pub(crate) record: Vec<u8>,
}

/// Parse a central directory that the end records say holds `expected` entries.
pub(crate) fn parse_central_directory(
    directory: &[u8],
    expected: u64,
) -> Result<Vec<CentralEntry>, String> {
    let mut entries = Vec::new();
    let mut pos = 0;
    while pos < directory.len() {
        let (entry, len) = parse_central_entry(&directory[pos..])
            .map_err(|reason| format!("central directory record {}: {reason}", entries.len()))?;
        entries.push(entry);
        pos += len;
    }
    let found = entries.len() as u64;
    // Writers without ZIP64 support store the count modulo 2^16.
    if found != expected && !(expected < 0x1_0000 && found % 0x1_0000 == expected) {
        return Err(format!(
            "the end record announces {expected} entries, the central directory holds {found}"
        ));
    }
    Ok(entries)
}

fn parse_central_entry(data: &[u8]) -> Result<(CentralEntry, usize), String> {
    let truncated = "truncated record";
    let mut c = Cursor::new(data);
    if c.u32().ok_or(truncated)? != CENTRAL_SIGNATURE {
        return Err("bad signature".into());
    }
    let _made_by = c.u16().ok_or(truncated)?;
    let _needed = c.u16().ok_or(truncated)?;
    let flags = c.u16().ok_or(truncated)?;
    let method = c.u16().ok_or(truncated)?;
    let _time = c.u16().ok_or(truncated)?;
    let _date = c.u16().ok_or(truncated)?;
    let crc32 = c.u32().ok_or(truncated)?;
    let compressed_size = c.u32().ok_or(truncated)?;
    let size = c.u32().ok_or(truncated)?;
    let name_len = c.u16().ok_or(truncated)?;
    let extra_len = c.u16().ok_or(truncated)?;
    let comment_len = c.u16().ok_or(truncated)?;
    let disk = c.u16().ok_or(truncated)?;
    let _internal = c.u16().ok_or(truncated)?;
    let _external = c.u32().ok_or(truncated)?;
    let header_offset = c.u32().ok_or(truncated)?;
    let name = c.bytes(usize::from(name_len)).ok_or(truncated)?.to_vec();
    let extra = c.bytes(usize::from(extra_len)).ok_or(truncated)?;
    c.bytes(usize::from(comment_len)).ok_or(truncated)?;
    let len = c.pos;

    let mut size = u64::from(size);
    let mut compressed_size = u64::from(compressed_size);
    let mut header_offset = u64::from(header_offset);
    let mut disk = u32::from(disk);
    let wide = [size, compressed_size, header_offset].contains(&u64::from(SATURATED_32))
        || disk == u32::from(SATURATED_16);
    if wide {
        let name_text = String::from_utf8_lossy(&name);
        let field = zip64_extra(extra)
            .ok_or_else(|| format!("{name_text:?}: no ZIP64 extra field for its large values"))?;
        let mut z = Cursor::new(field);
        let short = || format!("{name_text:?}: ZIP64 extra field too short");
        if size == u64::from(SATURATED_32) {
            size = z.u64().ok_or_else(short)?;
        }
        if compressed_size == u64::from(SATURATED_32) {
            compressed_size = z.u64().ok_or_else(short)?;
        }
        if header_offset == u64::from(SATURATED_32) {
            header_offset = z.u64().ok_or_else(short)?;
        }
        if disk == u32::from(SATURATED_16) {
            disk = z.u32().ok_or_else(short)?;
        }
    }
    if disk != 0 {
        return Err(format!(
            "{:?} starts on disk {disk}: archives spanning several disks are not supported",
            String::from_utf8_lossy(&name)
        ));
    }
    Ok((
        CentralEntry {
            name,
            flags,
            method,
            crc32,
            compressed_size,
            size,
            header_offset,
            record: data[..len].to_vec(),
        },
        len,
    ))
}

/// The data of the ZIP64 extra field among `extra`'s fields, if there is one.
fn zip64_extra(extra: &[u8]) -> Option<&[u8]> {
    let mut c = Cursor::new(extra);
    while c.pos < extra.len() {
        let id = c.u16()?;
        let len = c.u16()?;
        let data = c.bytes(usize::from(len))?;
        if id == ZIP64_EXTRA_ID {
            return Some(data);
        }
    }
    None
}

/// The name and the length of the variable part (name and extra field) of the local header
/// at the start of `header`, which holds at least [`LOCAL_LEN`] bytes.
pub(crate) fn parse_local_header(header: &[u8]) -> Result<(u64, &[u8]), String> {
    let truncated = "truncated local header";
    let mut c = Cursor::new(header);
    if c.u32().ok_or(truncated)? != LOCAL_SIGNATURE {
        return Err("bad local header signature".into());
    }
    c.bytes(22).ok_or(truncated)?;
    let name_len = c.u16().ok_or(truncated)?;
    let extra_len = c.u16().ok_or(truncated)?;
    let name = c.bytes(usize::from(name_len)).unwrap_or(&[]);
    Ok((u64::from(name_len) + u64::from(extra_len), name))
}

/// How an entry this crate writes is described in both its headers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewEntry<'a> {
    pub(crate) name: &'a str,
    pub(crate) crc32: u32,
    pub(crate) size: u64,
    pub(crate) header_offset: u64,
    pub(crate) time: u16,
    pub(crate) date: u16,
    /// Put the sizes (and offset) in a ZIP64 extra field even when they fit in 32 bits.
    pub(crate) force_zip64: bool,
}

impl NewEntry<'_> {
    fn flags(&self) -> u16 {
        if self.name.is_ascii() { 0 } else { FLAG_UTF8 }
    }

    fn large_size(&self) -> bool {
        self.force_zip64 || self.size >= u64::from(SATURATED_32)
    }

    fn large_offset(&self) -> bool {
        self.force_zip64 || self.header_offset >= u64::from(SATURATED_32)
    }

    fn version_needed(&self) -> u16 {
        if self.large_size() || self.large_offset() {
            45
        } else {
            20
        }
    }

    /// The fields both headers hold, in the same order: version needed, flags, method, time,
    /// date, CRC-32, stored and full size (saturated when `large`: then in the ZIP64 field).
    fn shared_fields(&self, out: &mut Vec<u8>, large: bool) {
        out.extend_from_slice(&self.version_needed().to_le_bytes());
        out.extend_from_slice(&self.flags().to_le_bytes());
        out.extend_from_slice(&METHOD_STORED.to_le_bytes());
        out.extend_from_slice(&self.time.to_le_bytes());
        out.extend_from_slice(&self.date.to_le_bytes());
        out.extend_from_slice(&self.crc32.to_le_bytes());
        let size32 = if large {
            SATURATED_32
        } else {
            self.size as u32
        };
        out.extend_from_slice(&size32.to_le_bytes());
        out.extend_from_slice(&size32.to_le_bytes());
    }

    /// The local header; the data follows it.
    pub(crate) fn local_header(&self) -> Vec<u8> {
        let large = self.large_size();
        let extra_len: u16 = if large { 4 + 16 } else { 0 };
        let mut out = Vec::with_capacity(30 + self.name.len() + usize::from(extra_len));
        out.extend_from_slice(&LOCAL_SIGNATURE.to_le_bytes());
        self.shared_fields(&mut out, large);
        out.extend_from_slice(&name_len(self.name).to_le_bytes());
        out.extend_from_slice(&extra_len.to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        if large {
            // In a local header the ZIP64 field holds both sizes, always.
            out.extend_from_slice(&ZIP64_EXTRA_ID.to_le_bytes());
            out.extend_from_slice(&16u16.to_le_bytes());
            out.extend_from_slice(&self.size.to_le_bytes());
            out.extend_from_slice(&self.size.to_le_bytes());
        }
        out
    }

    /// The central directory record.
    pub(crate) fn central_record(&self) -> Vec<u8> {
        let large_size = self.large_size();
        let large_offset = self.large_offset();
        let mut zip64 = Vec::new();
        if large_size {
            zip64.extend_from_slice(&self.size.to_le_bytes());
            zip64.extend_from_slice(&self.size.to_le_bytes());
        }
        if large_offset {
            zip64.extend_from_slice(&self.header_offset.to_le_bytes());
        }
        let extra_len = if zip64.is_empty() {
            0
        } else {
            4 + zip64.len() as u16
        };
        let mut out = Vec::with_capacity(CENTRAL_LEN + self.name.len() + usize::from(extra_len));
        out.extend_from_slice(&CENTRAL_SIGNATURE.to_le_bytes());
        // Made by: Unix (3), specification 4.5.
        out.extend_from_slice(&(0x0300u16 | 45).to_le_bytes());
        self.shared_fields(&mut out, large_size);
        out.extend_from_slice(&name_len(self.name).to_le_bytes());
        out.extend_from_slice(&extra_len.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // comment length
        out.extend_from_slice(&0u16.to_le_bytes()); // disk
        out.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
        // External attributes: a regular file, rw-r--r--.
        out.extend_from_slice(&(0o100_644u32 << 16).to_le_bytes());
        let offset32 = if large_offset {
            SATURATED_32
        } else {
            self.header_offset as u32
        };
        out.extend_from_slice(&offset32.to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        if !zip64.is_empty() {
            out.extend_from_slice(&ZIP64_EXTRA_ID.to_le_bytes());
            out.extend_from_slice(&(zip64.len() as u16).to_le_bytes());
            out.extend_from_slice(&zip64);
        }
        out
    }
}

/// The length of a store key as a zip name. Store keys this store writes are checked to be
/// at most 65,535 bytes first.
fn name_len(name: &str) -> u16 {
    u16::try_from(name.len()).unwrap_or(u16::MAX)
}

/// The longest name a zip entry can have.
pub(crate) const MAX_NAME_LEN: usize = u16::MAX as usize;

/// The end records for a central directory of `entries` records and `size` bytes starting at
/// `offset`: a ZIP64 end record and locator when a value needs them (or `force_zip64`),
/// then the end record with `comment`.
pub(crate) fn end_records(
    entries: u64,
    offset: u64,
    size: u64,
    comment: &[u8],
    force_zip64: bool,
) -> Vec<u8> {
    let zip64 = force_zip64
        || entries >= u64::from(SATURATED_16)
        || offset >= u64::from(SATURATED_32)
        || size >= u64::from(SATURATED_32);
    let mut out = Vec::with_capacity(ZIP64_END_LEN + ZIP64_LOCATOR_LEN + END_LEN + comment.len());
    if zip64 {
        let record_offset = offset + size;
        out.extend_from_slice(&ZIP64_END_SIGNATURE.to_le_bytes());
        out.extend_from_slice(&((ZIP64_END_LEN - 12) as u64).to_le_bytes());
        out.extend_from_slice(&(0x0300u16 | 45).to_le_bytes());
        out.extend_from_slice(&45u16.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes()); // this disk
        out.extend_from_slice(&0u32.to_le_bytes()); // the directory's disk
        out.extend_from_slice(&entries.to_le_bytes());
        out.extend_from_slice(&entries.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&ZIP64_LOCATOR_SIGNATURE.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes()); // the record's disk
        out.extend_from_slice(&record_offset.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes()); // disks in all
    }
    let entries16 = if zip64 { SATURATED_16 } else { entries as u16 };
    let (offset32, size32) = if zip64 {
        (SATURATED_32, SATURATED_32)
    } else {
        (offset as u32, size as u32)
    };
    out.extend_from_slice(&END_SIGNATURE.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // this disk
    out.extend_from_slice(&0u16.to_le_bytes()); // the directory's disk
    out.extend_from_slice(&entries16.to_le_bytes());
    out.extend_from_slice(&entries16.to_le_bytes());
    out.extend_from_slice(&size32.to_le_bytes());
    out.extend_from_slice(&offset32.to_le_bytes());
    let comment = &comment[..comment.len().min(usize::from(u16::MAX))];
    out.extend_from_slice(&(comment.len() as u16).to_le_bytes());
    out.extend_from_slice(comment);
    out
}

/// An MS-DOS time and date (two-second resolution, years 1980 to 2107) for `unix_seconds`
/// since 1970 in UTC.
pub(crate) fn dos_time_date(unix_seconds: u64) -> (u16, u16) {
    let days = unix_seconds / 86_400;
    let seconds = unix_seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    if year < 1980 {
        return (0, (1 << 5) | 1);
    }
    if year > 2107 {
        return ((23 << 11) | (59 << 5) | 29, (127 << 9) | (12 << 5) | 31);
    }
    let time = ((seconds / 3600) << 11) | (((seconds / 60) % 60) << 5) | ((seconds % 60) / 2);
    let date = ((year - 1980) << 9) | (u64::from(month) << 5) | u64::from(day);
    (time as u16, date as u16)
}

/// The proleptic Gregorian calendar date of the day `days` after 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u32, u32) {
    // Count from 0000-03-01, so that leap days fall at the end of each year; eras are
    // 400-year cycles of 146,097 days.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153; // 0 = March
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, size: u64, offset: u64, force: bool) -> NewEntry<'_> {
        NewEntry {
            name,
            crc32: 0xDEAD_BEEF,
            size,
            header_offset: offset,
            time: 0x1234,
            date: 0x5678,
            force_zip64: force,
        }
    }

    #[test]
    fn dates_convert_to_dos_form() {
        // 2026-11-21 13:45:10 UTC.
        let (time, date) = dos_time_date(1_795_268_710);
        assert_eq!(time, (13 << 11) | (45 << 5) | 5);
        assert_eq!(date, (46 << 9) | (11 << 5) | 21);
        // Leap day 2024-02-29 00:00:00.
        assert_eq!(dos_time_date(1_709_164_800), (0, (44 << 9) | (2 << 5) | 29));
        // Before 1980: the earliest DOS date.
        assert_eq!(dos_time_date(0), (0, (1 << 5) | 1));
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
    }

    #[test]
    fn written_records_parse_back() {
        for force in [false, true] {
            let names = ["zarr.json", "a/c/0/1", "é/ü"];
            let mut directory = Vec::new();
            for (i, name) in names.iter().enumerate() {
                let e = entry(name, 100 + i as u64, 1000 * i as u64, force);
                let local = e.local_header();
                let (variable, local_name) = parse_local_header(&local).unwrap();
                assert_eq!(local_name, name.as_bytes());
                assert_eq!(LOCAL_LEN + variable, local.len() as u64);
                directory.extend_from_slice(&e.central_record());
            }
            let entries = parse_central_directory(&directory, 3).unwrap();
            for (i, (parsed, name)) in entries.iter().zip(names).enumerate() {
                assert_eq!(parsed.name, name.as_bytes());
                assert_eq!(parsed.size, 100 + i as u64);
                assert_eq!(parsed.compressed_size, 100 + i as u64);
                assert_eq!(parsed.header_offset, 1000 * i as u64);
                assert_eq!(parsed.crc32, 0xDEAD_BEEF);
                assert_eq!(parsed.method, METHOD_STORED);
                assert_eq!(parsed.flags & FLAG_UTF8 != 0, !name.is_ascii());
            }
            // An archive: 50 bytes of prepended data, 3000 bytes of entries, the directory,
            // the end records.
            let mut file = vec![0u8; 3050];
            file.extend_from_slice(&directory);
            file.extend_from_slice(&end_records(3, 3000, directory.len() as u64, b"hi", force));
            let end = parse_end(&file, file.len() as u64).unwrap();
            assert_eq!(
                end,
                End {
                    entries: 3,
                    directory_size: directory.len() as u64,
                    directory_offset: 3050,
                    prepended: 50,
                    comment: b"hi".to_vec(),
                }
            );
            // Only the tail of a long file is given.
            let tail = &file[1000..];
            assert_eq!(parse_end(tail, file.len() as u64).unwrap(), end);
        }
    }

    #[test]
    fn large_values_use_zip64_fields() {
        let e = entry("big", 5 << 30, 7 << 30, false);
        let local = e.local_header();
        assert_eq!(&local[18..26], &[0xFF; 8]);
        let parsed = parse_central_directory(&e.central_record(), 1).unwrap();
        assert_eq!(parsed[0].size, 5 << 30);
        assert_eq!(parsed[0].header_offset, 7 << 30);
        // Only the offset is large: the sizes stay 32-bit.
        let e = entry("small", 10, 7 << 30, false);
        assert_eq!(e.local_header().len(), 30 + 5);
        let parsed = parse_central_directory(&e.central_record(), 1).unwrap();
        assert_eq!((parsed[0].size, parsed[0].header_offset), (10, 7 << 30));
        // 70,000 entries need the ZIP64 end record.
        let records = end_records(70_000, 0, 0, b"", false);
        assert_eq!(records.len(), 56 + 20 + 22);
        let end = parse_end(&records, records.len() as u64).unwrap();
        assert_eq!(end.entries, 70_000);
    }

    #[test]
    fn malformed_archives_are_errors() {
        assert!(parse_end(b"", 0).unwrap_err().contains("no end of central"));
        assert!(parse_end(&[0u8; 100], 100).is_err());
        // A directory that claims to be larger than the file before the end record.
        let records = end_records(1, 0, 500, b"", false);
        let err = parse_end(&records, records.len() as u64).unwrap_err();
        assert!(err.contains("larger than"), "{err}");
        // A directory recorded past its real place.
        let mut file = vec![0u8; 10];
        file.extend_from_slice(&end_records(0, 20, 0, b"", false));
        let err = parse_end(&file, file.len() as u64).unwrap_err();
        assert!(err.contains("overlap"), "{err}");
        // Every truncation of a central directory record is an error, never a panic.
        let record = entry("a/b", 1, 2, true).central_record();
        for len in 1..record.len() {
            assert!(parse_central_directory(&record[..len], 1).is_err(), "{len}");
        }
        // A count that does not match.
        let err = parse_central_directory(&record, 2).unwrap_err();
        assert!(err.contains("announces 2"), "{err}");
        // A saturated size without its ZIP64 field.
        let mut broken = entry("x", 1, 2, false).central_record();
        broken[24..28].copy_from_slice(&[0xFF; 4]);
        let err = parse_central_directory(&broken, 1).unwrap_err();
        assert!(err.contains("no ZIP64 extra field"), "{err}");
        assert!(parse_local_header(b"PK\x03\x04short").is_err());
        assert!(parse_local_header(&[0u8; 30]).is_err());
    }
}
