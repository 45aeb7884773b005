//! The bubblewrap command line and the init's arguments.

use std::ffi::OsString;
use std::path::PathBuf;

use gatehouse_confine::{
    INIT_PATH, InitArgs, InitCommand, MAX_MEMORY_MIB, MAX_PROCESSES, PROXY_PORT, PROXY_SOCKET_PATH,
    SandboxPlan, bwrap_args, forward_args, init_args, parse_init_args,
};
use proptest::prelude::*;

fn plan() -> SandboxPlan {
    SandboxPlan {
        init: "/opt/gh/gatehouse-sandbox-init".into(),
        program: "/opt/server/bin/server".into(),
        args: vec!["--root".into(), "/home/alice/docs".into()],
        cwd: "/".into(),
        system_read: vec!["/usr".into(), "/etc/ssl".into()],
        symlinks: vec![
            ("usr/lib".into(), "/lib".into()),
            ("usr/bin".into(), "/bin".into()),
        ],
        code_read: vec!["/opt/server".into()],
        read: vec!["/home/alice/docs".into()],
        write: vec!["/home/alice/docs/out".into()],
        user_home: "/home/alice".into(),
        private_home: "/var/gh/sandbox/s1/home".into(),
        private_tmp: "/var/gh/sandbox/s1/tmp".into(),
        env: vec![
            ("HOME".into(), "/home/alice".into()),
            ("PATH".into(), "/usr/bin:/bin".into()),
        ],
        proxy_socket: Some("/run/user/1000/gatehouse/px/a.sock".into()),
        share_network: false,
        processes: 0,
        memory_mib: 4096,
    }
}

fn strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_str().expect("utf-8").to_string())
        .collect()
}

/// The position of a sequence of arguments, which must occur exactly once.
fn find(args: &[String], seq: &[&str]) -> usize {
    let hits: Vec<usize> = (0..args.len().saturating_sub(seq.len() - 1))
        .filter(|&i| args[i..i + seq.len()].iter().zip(seq).all(|(a, b)| a == b))
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "{seq:?} found {} times in {args:?}",
        hits.len()
    );
    hits[0]
}

fn absent(args: &[String], word: &str) {
    assert!(!args.iter().any(|a| a == word), "{word} in {args:?}");
}

#[test]
fn the_whole_command_line_for_a_typical_plan() {
    let got = strings(&bwrap_args(&plan()));
    let want: Vec<&str> = vec![
        "--die-with-parent",
        "--new-session",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--unshare-net",
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--setenv",
        "HOME",
        "/home/alice",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--ro-bind",
        "/usr",
        "/usr",
        "--ro-bind",
        "/etc/ssl",
        "/etc/ssl",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/bin",
        "/bin",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/run",
        "--dir",
        "/run/gatehouse",
        "--bind",
        "/var/gh/sandbox/s1/tmp",
        "/tmp",
        "--bind",
        "/var/gh/sandbox/s1/home",
        "/home/alice",
        "--ro-bind",
        "/opt/server",
        "/opt/server",
        "--ro-bind",
        "/home/alice/docs",
        "/home/alice/docs",
        "--bind",
        "/home/alice/docs/out",
        "/home/alice/docs/out",
        "--ro-bind",
        "/opt/gh/gatehouse-sandbox-init",
        INIT_PATH,
        "--bind",
        "/run/user/1000/gatehouse/px/a.sock",
        PROXY_SOCKET_PATH,
        "--chdir",
        "/",
        "--",
        INIT_PATH,
        "--memory-mib",
        "4096",
        "--processes",
        "0",
        "--proxy-port",
        "3128",
        "--proxy-socket",
        PROXY_SOCKET_PATH,
        "--",
        "/opt/server/bin/server",
        "--root",
        "/home/alice/docs",
    ];
    assert_eq!(got, want);
    absent(&got, "--ro-bind-try");
    absent(&got, "--share-net");
}

#[test]
fn a_write_path_under_a_read_path_is_mounted_after_it_whatever_the_order_given() {
    let mut p = plan();
    p.read = vec!["/srv/a/b/c".into(), "/srv/a".into()];
    p.write = vec!["/srv/a/b".into()];
    let got = strings(&bwrap_args(&p));
    let ro_a = find(&got, &["--ro-bind", "/srv/a", "/srv/a"]);
    let rw_b = find(&got, &["--bind", "/srv/a/b", "/srv/a/b"]);
    let ro_c = find(&got, &["--ro-bind", "/srv/a/b/c", "/srv/a/b/c"]);
    assert!(ro_a < rw_b && rw_b < ro_c, "{got:?}");
}

#[test]
fn at_the_same_path_write_beats_read_and_code_stays_read_only() {
    let mut p = plan();
    p.read = vec!["/srv/x".into()];
    p.write = vec!["/srv/x".into(), "/opt/server".into()];
    let got = strings(&bwrap_args(&p));
    let ro = find(&got, &["--ro-bind", "/srv/x", "/srv/x"]);
    let rw = find(&got, &["--bind", "/srv/x", "/srv/x"]);
    assert!(ro < rw);
    let rw_code = find(&got, &["--bind", "/opt/server", "/opt/server"]);
    let ro_code = find(&got, &["--ro-bind", "/opt/server", "/opt/server"]);
    assert!(
        rw_code < ro_code,
        "the code's read-only bind must come last: {got:?}"
    );
}

#[test]
fn the_private_home_comes_before_grants_under_the_home_and_the_system_before_it() {
    let mut p = plan();
    p.write = vec!["/home/alice".into()];
    p.read = vec!["/home/alice/.config/app".into()];
    p.code_read = vec!["/home/alice/.local/share/gh/store/abc".into()];
    let got = strings(&bwrap_args(&p));
    let usr = find(&got, &["--ro-bind", "/usr", "/usr"]);
    let link = find(&got, &["--symlink", "usr/lib", "/lib"]);
    let run = find(
        &got,
        &[
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/run",
            "--dir",
            "/run/gatehouse",
        ],
    );
    let home = find(&got, &["--bind", "/var/gh/sandbox/s1/home", "/home/alice"]);
    let tmp = find(&got, &["--bind", "/var/gh/sandbox/s1/tmp", "/tmp"]);
    let whole_home = find(&got, &["--bind", "/home/alice", "/home/alice"]);
    let config = find(
        &got,
        &[
            "--ro-bind",
            "/home/alice/.config/app",
            "/home/alice/.config/app",
        ],
    );
    let code = find(
        &got,
        &[
            "--ro-bind",
            "/home/alice/.local/share/gh/store/abc",
            "/home/alice/.local/share/gh/store/abc",
        ],
    );
    let init = find(
        &got,
        &["--ro-bind", "/opt/gh/gatehouse-sandbox-init", INIT_PATH],
    );
    let chdir = find(&got, &["--chdir", "/"]);
    assert!(
        usr < link && link < run && run < tmp && run < home,
        "{got:?}"
    );
    assert!(
        home < whole_home && whole_home < config && whole_home < code,
        "{got:?}"
    );
    assert!(config < init && code < init && init < chdir, "{got:?}");
}

#[test]
fn a_grant_above_the_home_or_tmp_cannot_cover_the_private_dirs() {
    let mut p = plan();
    p.read = vec!["/home".into(), "/".into()];
    p.write = vec![];
    let got = strings(&bwrap_args(&p));
    let all_homes = find(&got, &["--ro-bind", "/home", "/home"]);
    let root = find(&got, &["--ro-bind", "/", "/"]);
    let home = find(&got, &["--bind", "/var/gh/sandbox/s1/home", "/home/alice"]);
    let tmp = find(&got, &["--bind", "/var/gh/sandbox/s1/tmp", "/tmp"]);
    assert!(
        root < all_homes && root < tmp && all_homes < home,
        "{got:?}"
    );
    // A grant of the home itself or of /tmp replaces the private one: it comes after.
    p.read = vec![];
    p.write = vec!["/home/alice".into(), "/tmp".into()];
    let got = strings(&bwrap_args(&p));
    assert!(
        find(&got, &["--bind", "/var/gh/sandbox/s1/home", "/home/alice"])
            < find(&got, &["--bind", "/home/alice", "/home/alice"])
    );
    assert!(
        find(&got, &["--bind", "/var/gh/sandbox/s1/tmp", "/tmp"])
            < find(&got, &["--bind", "/tmp", "/tmp"])
    );
}

#[test]
fn the_network_namespace_is_shared_only_for_any() {
    let mut p = plan();
    assert!(strings(&bwrap_args(&p)).contains(&"--unshare-net".to_string()));
    p.share_network = true;
    p.proxy_socket = None;
    let got = strings(&bwrap_args(&p));
    absent(&got, "--unshare-net");
    for always in [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ] {
        find(&got, &[always]);
    }
}

#[test]
fn the_proxy_socket_is_bound_only_when_some() {
    let mut p = plan();
    let with = strings(&bwrap_args(&p));
    find(
        &with,
        &[
            "--bind",
            "/run/user/1000/gatehouse/px/a.sock",
            PROXY_SOCKET_PATH,
        ],
    );
    find(
        &with,
        &["--proxy-port", "3128", "--proxy-socket", PROXY_SOCKET_PATH],
    );
    p.proxy_socket = None;
    let without = strings(&bwrap_args(&p));
    absent(&without, PROXY_SOCKET_PATH);
    absent(&without, "--proxy-port");
}

#[test]
fn the_environment_is_cleared_then_set_pair_by_pair() {
    let mut p = plan();
    p.env = vec![
        ("A".into(), "with space".into()),
        ("B".into(), String::new()),
        ("HTTPS_PROXY".into(), "http://127.0.0.1:3128".into()),
    ];
    let got = strings(&bwrap_args(&p));
    let clear = find(&got, &["--clearenv"]);
    let a = find(&got, &["--setenv", "A", "with space"]);
    let b = find(&got, &["--setenv", "B", ""]);
    let proxy = find(&got, &["--setenv", "HTTPS_PROXY", "http://127.0.0.1:3128"]);
    assert!(clear < a && a < b && b < proxy);
    assert_eq!(got.iter().filter(|a| *a == "--setenv").count(), 3);
    p.env.clear();
    absent(&strings(&bwrap_args(&p)), "--setenv");
}

#[test]
fn hostile_arguments_stay_after_the_separators() {
    let mut p = plan();
    p.args = vec![
        "--".into(),
        "--bind".into(),
        "/".into(),
        "/".into(),
        "--unshare-net".into(),
    ];
    let got = strings(&bwrap_args(&p));
    let program = got
        .iter()
        .position(|a| a == "/opt/server/bin/server")
        .unwrap();
    assert_eq!(
        &got[program + 1..],
        &["--", "--bind", "/", "/", "--unshare-net"]
    );
    // bwrap stops reading options at the first "--", which is before the init.
    let first_sep = got.iter().position(|a| a == "--").unwrap();
    assert_eq!(got[first_sep + 1], INIT_PATH);
    assert_eq!(got[program - 1], "--");
    let bwrap_binds = got[..first_sep].iter().filter(|a| *a == "--bind").count();
    assert_eq!(bwrap_binds, 4, "{got:?}");
}

#[test]
fn init_args_carry_the_bounds_and_the_proxy() {
    let mut p = plan();
    p.processes = 8;
    p.memory_mib = 512;
    assert_eq!(
        init_args(&p),
        [
            "--memory-mib",
            "512",
            "--processes",
            "8",
            "--proxy-port",
            "3128",
            "--proxy-socket",
            PROXY_SOCKET_PATH
        ]
    );
    p.proxy_socket = None;
    assert_eq!(init_args(&p), ["--memory-mib", "512", "--processes", "8"]);
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn init_argv_parses() {
    let got = parse_init_args(&argv(&[
        "--memory-mib",
        "100",
        "--processes",
        "0",
        "--proxy-port",
        "3128",
        "--proxy-socket",
        PROXY_SOCKET_PATH,
        "--",
        "/usr/bin/node",
        "server.js",
        "--",
        "-x",
    ]))
    .unwrap();
    assert_eq!(
        got,
        InitCommand::Run(InitArgs {
            memory_mib: 100,
            processes: 0,
            proxy: Some((PROXY_PORT, PROXY_SOCKET_PATH.into())),
            program: "/usr/bin/node".into(),
            args: argv(&["server.js", "--", "-x"]),
        })
    );
    let got = parse_init_args(&argv(&[
        "--processes",
        "2",
        "--memory-mib",
        "1",
        "--",
        "/bin/x",
    ]))
    .unwrap();
    assert!(matches!(
        got,
        InitCommand::Run(InitArgs {
            proxy: None,
            processes: 2,
            memory_mib: 1,
            ..
        })
    ));
    assert_eq!(
        parse_init_args(&argv(&["--self-check"])).unwrap(),
        InitCommand::SelfCheck
    );
    let forward = forward_args(PROXY_PORT, std::path::Path::new(PROXY_SOCKET_PATH));
    assert_eq!(
        parse_init_args(&forward).unwrap(),
        InitCommand::Forward {
            port: PROXY_PORT,
            socket: PROXY_SOCKET_PATH.into()
        }
    );
}

#[test]
fn init_argv_refuses_what_it_cannot_trust() {
    let refused = |words: &[&str]| {
        let got = parse_init_args(&argv(words));
        assert!(got.is_err(), "{words:?} gave {got:?}");
        got.unwrap_err()
    };
    refused(&[]);
    refused(&["--self-check", "--", "/bin/x"]);
    refused(&["--memory-mib", "1", "--processes", "0"]);
    refused(&["--memory-mib", "1", "--processes", "0", "--"]);
    refused(&["--memory-mib", "1", "--processes", "0", "--", "relative"]);
    refused(&["--processes", "0", "--", "/bin/x"]);
    refused(&["--memory-mib", "1", "--", "/bin/x"]);
    refused(&["--memory-mib", "0", "--processes", "0", "--", "/bin/x"]);
    refused(&[
        "--memory-mib",
        &(MAX_MEMORY_MIB + 1).to_string(),
        "--processes",
        "0",
        "--",
        "/bin/x",
    ]);
    refused(&[
        "--memory-mib",
        "1",
        "--processes",
        &(MAX_PROCESSES + 1).to_string(),
        "--",
        "/bin/x",
    ]);
    refused(&["--memory-mib", "+1", "--processes", "0", "--", "/bin/x"]);
    refused(&[
        "--memory-mib",
        "1",
        "--memory-mib",
        "2",
        "--processes",
        "0",
        "--",
        "/bin/x",
    ]);
    refused(&[
        "--memory-mib",
        "1",
        "--processes",
        "0",
        "--proxy-port",
        "3128",
        "--",
        "/bin/x",
    ]);
    refused(&[
        "--memory-mib",
        "1",
        "--processes",
        "0",
        "--proxy-socket",
        "/s",
        "--",
        "/bin/x",
    ]);
    refused(&[
        "--memory-mib",
        "1",
        "--processes",
        "0",
        "--proxy-port",
        "0",
        "--proxy-socket",
        "/s",
        "--",
        "/bin/x",
    ]);
    refused(&[
        "--memory-mib",
        "1",
        "--processes",
        "0",
        "--proxy-port",
        "65536",
        "--proxy-socket",
        "/s",
        "--",
        "/bin/x",
    ]);
    refused(&[
        "--memory-mib",
        "1",
        "--processes",
        "0",
        "--proxy-port",
        "1",
        "--proxy-socket",
        "rel",
        "--",
        "/bin/x",
    ]);
    refused(&[
        "--memory-mib",
        "1",
        "--processes",
        "0",
        "--bogus",
        "1",
        "--",
        "/bin/x",
    ]);
    refused(&["--memory-mib", "1", "--processes", "--", "/bin/x"]);
    refused(&["--forward", "--proxy-port", "3128"]);
    refused(&[
        "--forward",
        "--proxy-port",
        "3128",
        "--proxy-socket",
        "/s",
        "--memory-mib",
        "1",
    ]);
    let e = refused(&["--memory-mib", "lots", "--processes", "0", "--", "/bin/x"]);
    assert!(e.contains("--memory-mib") && e.contains("lots"), "{e}");
}

fn plan_strategy() -> impl Strategy<Value = SandboxPlan> {
    (
        1..=MAX_MEMORY_MIB,
        0..=MAX_PROCESSES,
        any::<bool>(),
        "/[a-z]{1,8}(/[a-z0-9.]{1,8}){0,3}",
        prop::collection::vec("\\PC{0,12}", 0..5),
    )
        .prop_map(
            |(memory_mib, processes, proxy, program, args)| SandboxPlan {
                memory_mib,
                processes,
                proxy_socket: proxy.then(|| PathBuf::from("/x/p.sock")),
                program: program.into(),
                args,
                ..plan()
            },
        )
}

proptest! {
    #[test]
    fn init_args_round_trip(p in plan_strategy()) {
        let full = bwrap_args(&p);
        let words = strings(&full);
        // What the init receives: everything after INIT_PATH following bwrap's "--".
        let sep = words.iter().position(|a| a == "--").unwrap();
        prop_assert_eq!(words[sep + 1].as_str(), INIT_PATH);
        let parsed = parse_init_args(&words[sep + 2..]).unwrap();
        let want = InitCommand::Run(InitArgs {
            memory_mib: p.memory_mib,
            processes: p.processes,
            proxy: p.proxy_socket.as_ref().map(|_| (PROXY_PORT, PathBuf::from(PROXY_SOCKET_PATH))),
            program: p.program.clone(),
            args: p.args.clone(),
        });
        prop_assert_eq!(parsed, want);
    }
}
