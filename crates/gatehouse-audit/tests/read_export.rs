//! Reading records back, filtering by server and event, and exporting.

#[path = "support/fixture.rs"]
mod fixture;

use std::fs;

use fixture::{lines, log_with, new_log, write_lines};
use gatehouse_audit::{ExportFormat, Filter, export, read};
use serde_json::{Value, json};
use time::macros::datetime;

#[test]
fn read_returns_typed_records_in_order() {
    let (_dir, path) = log_with(3);
    let records = read(&path).unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(records[0].seq, 1);
    assert_eq!(records[0].event, "admission_decision");
    assert_eq!(records[0].server.as_deref(), Some("demo"));
    assert_eq!(records[1].time, datetime!(2026-05-01 12:00:02 UTC));
    assert_eq!(records[2].data["i"], json!(3));
    assert_eq!(records[0].prev, "0".repeat(64));
    assert_eq!(records[1].prev, fixture::sha256_hex(&lines(&path)[0]));
}

#[test]
fn records_serialize_as_they_are_written() {
    let (_dir, path) = log_with(2);
    let all = lines(&path);
    for (record, line) in read(&path).unwrap().iter().zip(&all) {
        assert_eq!(&serde_json::to_vec(record).unwrap(), line);
    }
}

#[test]
fn filters_by_server_and_event() {
    let (_dir, path) = log_with(6);
    let records = read(&path).unwrap();
    let by_server = Filter {
        server: Some("demo".into()),
        event: None,
    };
    let seqs = |f: &Filter| {
        f.apply(records.clone())
            .iter()
            .map(|r| r.seq)
            .collect::<Vec<_>>()
    };
    assert_eq!(seqs(&by_server), [1, 3, 5]);
    let by_event = Filter {
        server: None,
        event: Some("tool_call".into()),
    };
    assert_eq!(seqs(&by_event), [2, 4, 6]);
    let both = Filter {
        server: Some("demo".into()),
        event: Some("tool_call".into()),
    };
    assert!(seqs(&both).is_empty());
    let unknown = Filter {
        server: Some("nobody".into()),
        event: None,
    };
    assert!(seqs(&unknown).is_empty());
    assert_eq!(seqs(&Filter::all()).len(), 6);
}

#[test]
fn export_jsonl_is_the_log_byte_for_byte() {
    let (_dir, path) = log_with(4);
    let mut out = Vec::new();
    assert_eq!(
        export(&path, &Filter::all(), ExportFormat::Jsonl, &mut out).unwrap(),
        4
    );
    assert_eq!(out, fs::read(&path).unwrap());
}

#[test]
fn export_json_array_holds_the_lines_unchanged() {
    let (_dir, path) = log_with(4);
    let filter = Filter {
        server: Some("other".into()),
        event: None,
    };
    let mut out = Vec::new();
    assert_eq!(
        export(&path, &filter, ExportFormat::JsonArray, &mut out).unwrap(),
        2
    );
    let array: Vec<Value> = serde_json::from_slice(&out).unwrap();
    assert_eq!(array.len(), 2);
    assert_eq!(array[0]["seq"], json!(2));
    assert_eq!(array[1]["seq"], json!(4));
    let all = lines(&path);
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(std::str::from_utf8(&all[1]).unwrap()));
    assert!(text.contains(std::str::from_utf8(&all[3]).unwrap()));

    let mut empty = Vec::new();
    let none = Filter {
        server: Some("nobody".into()),
        event: None,
    };
    export(&path, &none, ExportFormat::JsonArray, &mut empty).unwrap();
    assert_eq!(
        serde_json::from_slice::<Vec<Value>>(&empty).unwrap(),
        Vec::<Value>::new()
    );
}

#[test]
fn read_names_a_line_that_is_not_a_record() {
    let (_dir, path) = log_with(3);
    let mut all = lines(&path);
    all[1] = b"{\"not\":\"a record\"}".to_vec();
    write_lines(&path, &all);
    let err = read(&path).unwrap_err();
    assert_eq!(err.code(), "bad_record");
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn read_refuses_a_torn_tail_rather_than_drop_it() {
    let (_dir, path) = log_with(2);
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"seq\":3");
    fs::write(&path, bytes).unwrap();
    let err = read(&path).unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
}

#[test]
fn reading_a_missing_log_is_an_error() {
    let (_dir, path) = new_log();
    assert_eq!(read(&path).unwrap_err().code(), "not_found");
}
