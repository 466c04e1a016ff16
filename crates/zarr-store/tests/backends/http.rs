//! Read-only HTTP access through object_store's HTTP backend, against an in-process server
//! that honours every single-range form: `bytes=a-b`, `bytes=a-` and `bytes=-n`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zarr_store::{
    ByteRange, Error, ObjectStoreAdapter, ReadableStore, ReadableStoreExt, StoreKey, StorePrefix,
    WritableStore, testing,
};

/// A request as the server received it.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) range: Option<String>,
}

/// A minimal HTTP/1.1 file server over a map of paths to contents.
#[derive(Clone, Default)]
pub(crate) struct RangeServer {
    files: Arc<HashMap<String, Bytes>>,
    log: Arc<Mutex<Vec<Received>>>,
}

/// What a `Range` header asks of a `size`-byte file.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Whole,
    Part(u64, u64),
    Unsatisfiable,
}

/// Interpret a single-range `Range` header as RFC 9110 says.
fn answer_range(header: Option<&str>, size: u64) -> Answer {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return Answer::Whole;
    };
    if spec.contains(',') {
        // Several ranges: answering with the whole file is allowed.
        return Answer::Whole;
    }
    let Some((first, last)) = spec.split_once('-') else {
        return Answer::Whole;
    };
    match (first.trim(), last.trim()) {
        ("", n) => match n.parse::<u64>() {
            Ok(0) | Err(_) => Answer::Unsatisfiable,
            Ok(n) if size == 0 => {
                let _ = n;
                Answer::Unsatisfiable
            }
            Ok(n) => Answer::Part(size - n.min(size), size - 1),
        },
        (a, "") => match a.parse::<u64>() {
            Ok(a) if a < size => Answer::Part(a, size - 1),
            Ok(_) => Answer::Unsatisfiable,
            Err(_) => Answer::Whole,
        },
        (a, b) => match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(a), Ok(b)) if a <= b && a < size => Answer::Part(a, b.min(size - 1)),
            (Ok(a), Ok(b)) if a <= b => Answer::Unsatisfiable,
            _ => Answer::Whole,
        },
    }
}

impl RangeServer {
    pub(crate) async fn start(files: HashMap<String, Bytes>) -> (Self, String) {
        let server = Self {
            files: Arc::new(files),
            log: Arc::default(),
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = server.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let handle = handle.clone();
                tokio::spawn(async move { handle.serve(socket).await });
            }
        });
        (server, format!("http://{addr}"))
    }

    pub(crate) fn take_log(&self) -> Vec<Received> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    /// Serve requests on one connection until the client closes it.
    async fn serve(&self, mut socket: TcpStream) {
        let mut buf = Vec::new();
        loop {
            let head_end = loop {
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break end;
                }
                let mut chunk = [0u8; 4096];
                match socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            };
            let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
            buf.drain(..head_end + 4);
            let mut lines = head.split("\r\n");
            let mut request_line = lines.next().unwrap_or_default().split(' ');
            let method = request_line.next().unwrap_or_default().to_owned();
            let path = request_line.next().unwrap_or_default().to_owned();
            let mut range = None;
            let mut length = 0usize;
            for line in lines {
                if let Some((name, value)) = line.split_once(':') {
                    match name.trim().to_ascii_lowercase().as_str() {
                        "range" => range = Some(value.trim().to_owned()),
                        "content-length" => length = value.trim().parse().unwrap_or(0),
                        _ => {}
                    }
                }
            }
            // Discard any request body.
            while buf.len() < length {
                let mut chunk = [0u8; 4096];
                match socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            buf.drain(..length);
            self.log.lock().unwrap().push(Received {
                method: method.clone(),
                path: path.clone(),
                range: range.clone(),
            });
            let response = self.respond(&method, &path, range.as_deref());
            if socket.write_all(&response).await.is_err() {
                return;
            }
        }
    }

    fn respond(&self, method: &str, path: &str, range: Option<&str>) -> Vec<u8> {
        let plain = |status: &str, extra: &str| {
            format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n{extra}\r\n").into_bytes()
        };
        if method != "GET" && method != "HEAD" {
            return plain("405 Method Not Allowed", "Allow: GET, HEAD\r\n");
        }
        let Some(file) = self.files.get(path.trim_start_matches('/')) else {
            return plain("404 Not Found", "");
        };
        let size = file.len() as u64;
        let (status, body, extra) = match answer_range(range, size) {
            Answer::Whole => ("200 OK", file.clone(), String::new()),
            Answer::Part(a, b) => (
                "206 Partial Content",
                file.slice(a as usize..=b as usize),
                format!("Content-Range: bytes {a}-{b}/{size}\r\n"),
            ),
            Answer::Unsatisfiable => {
                return plain(
                    "416 Range Not Satisfiable",
                    &format!("Content-Range: bytes */{size}\r\n"),
                );
            }
        };
        let mut response = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\n\
             ETag: \"{size}\"\r\nLast-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n{extra}\r\n",
            body.len()
        )
        .into_bytes();
        if method == "GET" {
            response.extend_from_slice(&body);
        }
        response
    }
}

#[test]
fn the_test_server_understands_every_range_form() {
    assert_eq!(answer_range(None, 10), Answer::Whole);
    assert_eq!(answer_range(Some("bytes=2-5"), 10), Answer::Part(2, 5));
    assert_eq!(answer_range(Some("bytes=2-50"), 10), Answer::Part(2, 9));
    assert_eq!(answer_range(Some("bytes=10-12"), 10), Answer::Unsatisfiable);
    assert_eq!(answer_range(Some("bytes=4-"), 10), Answer::Part(4, 9));
    assert_eq!(answer_range(Some("bytes=10-"), 10), Answer::Unsatisfiable);
    assert_eq!(answer_range(Some("bytes=-3"), 10), Answer::Part(7, 9));
    assert_eq!(answer_range(Some("bytes=-30"), 10), Answer::Part(0, 9));
    assert_eq!(answer_range(Some("bytes=-0"), 10), Answer::Unsatisfiable);
    assert_eq!(answer_range(Some("bytes=-3"), 0), Answer::Unsatisfiable);
}

async fn served_store() -> (RangeServer, ObjectStoreAdapter, Vec<(StoreKey, Bytes)>) {
    let values = testing::sample_values();
    let files = values
        .iter()
        .map(|(key, value)| (format!("files/data.zarr/{key}"), value.clone()))
        .collect();
    let (server, base) = RangeServer::start(files).await;
    let store = ObjectStoreAdapter::from_url(&format!("{base}/files/data.zarr")).unwrap();
    (server, store, values)
}

#[tokio::test]
async fn http_store_reads_every_range_form() {
    let (server, store, values) = served_store().await;
    assert!(store.is_read_only());
    testing::check_readable(&store, &values).await;
    // Each form goes over the wire as such, in one request.
    let (key, value) = &values[2];
    for (range, header) in [
        (ByteRange::new(0, 7), "bytes=0-6"),
        (ByteRange::from_offset(500), "bytes=500-"),
        (ByteRange::suffix(16), "bytes=-16"),
    ] {
        server.take_log();
        let got = store.get_range(key, range).await.unwrap();
        assert_eq!(got.unwrap(), range.slice(value).unwrap());
        let log = server.take_log();
        assert_eq!(log.len(), 1, "{range}: {log:?}");
        assert_eq!(log[0].range.as_deref(), Some(header));
    }
}

#[tokio::test]
async fn http_suffix_read_is_one_request() {
    let (server, store, values) = served_store().await;
    server.take_log();
    let (key, value) = &values[2];
    let got = store
        .get_partial_values(&[(key.clone(), ByteRange::suffix(100))])
        .await
        .unwrap();
    assert_eq!(got[0].as_ref().unwrap(), &value.slice(value.len() - 100..));
    let log = server.take_log();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].method, "GET");
    assert_eq!(log[0].path, format!("/files/data.zarr/{key}"));
    assert_eq!(log[0].range.as_deref(), Some("bytes=-100"));
}

#[tokio::test]
async fn http_store_is_read_only() {
    let (server, store, values) = served_store().await;
    let key = &values[0].0;
    let refused = [
        store.set(key, Bytes::from_static(b"x")).await,
        store.erase(key).await,
        store.erase_prefix(&StorePrefix::root()).await,
        store
            .set_partial_values(&[(key.clone(), 0, Bytes::from_static(b"x"))])
            .await,
    ];
    for result in refused {
        assert!(matches!(result, Err(Error::ReadOnly { .. })), "{result:?}");
    }
    // Nothing reached the server.
    assert!(server.take_log().is_empty());
    assert_eq!(store.get(key).await.unwrap().as_ref(), Some(&values[0].1));
}

/// object_store's default `get_ranges` merges these into one request for bytes 0..30 of a
/// 15-byte file, then answers 12..30 with 3 bytes and panics slicing 20..30. The adapter
/// coalesces itself and checks each range against the size in the response.
#[tokio::test]
async fn coalesced_ranges_past_the_end_are_errors_not_short_answers() {
    let mut files = HashMap::new();
    files.insert("f".to_owned(), Bytes::from_static(b"0123456789abcde"));
    let (_server, base) = RangeServer::start(files).await;
    let store = ObjectStoreAdapter::from_url(&base).unwrap();
    let key = StoreKey::new("f");
    for far in [ByteRange::new(12, 30), ByteRange::new(20, 30)] {
        let result = store
            .get_partial_values(&[(key.clone(), ByteRange::new(0, 10)), (key.clone(), far)])
            .await;
        match result {
            Err(Error::RangeOutOfBounds {
                range, size: 15, ..
            }) => assert_eq!(range, far),
            other => panic!("{far}: {other:?}"),
        }
    }
    let fine = store
        .get_partial_values(&[
            (key.clone(), ByteRange::new(0, 10)),
            (key, ByteRange::new(12, 15)),
        ])
        .await
        .unwrap();
    assert_eq!(fine[1].as_deref(), Some(&b"cde"[..]));
}
