//! The seccomp filter the init applies to itself just before it runs the server in place.
//!
//! Default action: allow. The filter is a short deny list, not an allow list: the sandbox's
//! mount, network and user namespaces already decide what the server can see and reach, and an
//! allow list would break interpreters (Node, Python) with every kernel and libc upgrade. What it
//! adds is what namespaces cannot express: no new processes unless granted, no syscalls that
//! reach into other processes or the kernel, no new namespaces, no typing into the terminal.
//!
//! The rules are kept as data ([`rule_map`]) so the tests can inspect every rule without
//! applying anything; [`programs`] compiles them with `seccompiler`.

use std::collections::BTreeMap;
use std::fmt;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

/// The error a refused syscall returns. A closed set: each errno gets its own compiled filter
/// (seccompiler gives one match action per filter; the kernel runs every stacked filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Refusal {
    /// "Operation not permitted": the call exists but the sandbox refuses it.
    Eperm,
    /// "Function not implemented": for `clone3`, whose flags live in memory a filter cannot
    /// read; libc then falls back to `clone`, whose flags the filter can check.
    Enosys,
}

impl Refusal {
    pub fn errno(self) -> u32 {
        let errno = match self {
            Refusal::Eperm => libc::EPERM,
            Refusal::Enosys => libc::ENOSYS,
        };
        errno.unsigned_abs()
    }
}

/// Why the filter could not be built or applied. The init prints it and exits 125.
#[derive(Debug)]
pub enum SeccompError {
    /// The init was built for an architecture the filter does not know.
    UnsupportedArch(&'static str),
    Build(String),
    Apply(String),
}

impl fmt::Display for SeccompError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeccompError::UnsupportedArch(arch) => write!(
                f,
                "no seccomp filter for the {arch} architecture (x86_64 and aarch64 only); \
                 set the server's confinement mode to off to run it unconfined"
            ),
            SeccompError::Build(e) => write!(f, "could not build the seccomp filter: {e}"),
            SeccompError::Apply(e) => write!(
                f,
                "the kernel refused the seccomp filter ({e}); a kernel without \
                 CONFIG_SECCOMP_FILTER cannot confine servers"
            ),
        }
    }
}

impl std::error::Error for SeccompError {}

/// The architecture this init runs on, as seccompiler names it.
pub fn target_arch() -> Result<TargetArch, SeccompError> {
    if cfg!(target_arch = "x86_64") {
        Ok(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Ok(TargetArch::aarch64)
    } else {
        Err(SeccompError::UnsupportedArch(std::env::consts::ARCH))
    }
}

/// Refused whatever the grants say: calls that reach into other processes (`ptrace`,
/// `process_vm_*`), change the kernel or the machine (modules, kexec, swap, reboot, acct,
/// quotas, port I/O), build a new view of the system (mounts, namespaces), or widen the kernel's
/// attack surface for no server's benefit (`bpf`, `perf_event_open`, `userfaultfd`, the keyring,
/// file handles that bypass the mount view, io_uring).
pub fn always_denied() -> Vec<(&'static str, i64)> {
    let mut list = vec![
        ("ptrace", libc::SYS_ptrace),
        ("process_vm_readv", libc::SYS_process_vm_readv),
        ("process_vm_writev", libc::SYS_process_vm_writev),
        ("kexec_load", libc::SYS_kexec_load),
        ("kexec_file_load", libc::SYS_kexec_file_load),
        ("init_module", libc::SYS_init_module),
        ("finit_module", libc::SYS_finit_module),
        ("delete_module", libc::SYS_delete_module),
        ("mount", libc::SYS_mount),
        ("umount2", libc::SYS_umount2),
        ("pivot_root", libc::SYS_pivot_root),
        // The new mount API does what mount(2) does.
        ("open_tree", libc::SYS_open_tree),
        ("move_mount", libc::SYS_move_mount),
        ("fsopen", libc::SYS_fsopen),
        ("fsconfig", libc::SYS_fsconfig),
        ("fsmount", libc::SYS_fsmount),
        ("fspick", libc::SYS_fspick),
        ("mount_setattr", libc::SYS_mount_setattr),
        ("unshare", libc::SYS_unshare),
        ("setns", libc::SYS_setns),
        ("bpf", libc::SYS_bpf),
        ("perf_event_open", libc::SYS_perf_event_open),
        ("userfaultfd", libc::SYS_userfaultfd),
        ("keyctl", libc::SYS_keyctl),
        ("add_key", libc::SYS_add_key),
        ("request_key", libc::SYS_request_key),
        ("open_by_handle_at", libc::SYS_open_by_handle_at),
        ("name_to_handle_at", libc::SYS_name_to_handle_at),
        ("swapon", libc::SYS_swapon),
        ("swapoff", libc::SYS_swapoff),
        ("reboot", libc::SYS_reboot),
        ("acct", libc::SYS_acct),
        ("quotactl", libc::SYS_quotactl),
        // io_uring runs its operations outside this filter's sight and has been a steady source
        // of kernel bugs; runtimes that try it (libuv) fall back to threads when it is refused.
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("io_uring_enter", libc::SYS_io_uring_enter),
        ("io_uring_register", libc::SYS_io_uring_register),
    ];
    #[cfg(target_arch = "x86_64")]
    list.extend([("iopl", libc::SYS_iopl), ("ioperm", libc::SYS_ioperm)]);
    list
}

/// Syscalls that start a new process outright (aarch64 has neither: libc uses clone there).
pub fn process_creation() -> Vec<(&'static str, i64)> {
    #[cfg(target_arch = "x86_64")]
    let list = vec![("fork", libc::SYS_fork), ("vfork", libc::SYS_vfork)];
    #[cfg(not(target_arch = "x86_64"))]
    let list = Vec::new();
    list
}

/// `clone` flags that create namespaces: refused always, like `unshare`.
pub const CLONE_NAMESPACE_FLAGS: [(&str, u64); 7] = [
    ("CLONE_NEWNS", libc::CLONE_NEWNS as u64),
    ("CLONE_NEWUSER", libc::CLONE_NEWUSER as u64),
    ("CLONE_NEWPID", libc::CLONE_NEWPID as u64),
    ("CLONE_NEWNET", libc::CLONE_NEWNET as u64),
    ("CLONE_NEWIPC", libc::CLONE_NEWIPC as u64),
    ("CLONE_NEWUTS", libc::CLONE_NEWUTS as u64),
    ("CLONE_NEWCGROUP", libc::CLONE_NEWCGROUP as u64),
];

/// `ioctl` requests that push input into the controlling terminal (TIOCSTI) or act on the
/// virtual console (TIOCLINUX, which can also paste): a classic sandbox escape through the
/// terminal the host was started from.
// The request type is c_ulong with glibc but c_int with musl: the cast is needed on one of them.
#[allow(clippy::unnecessary_cast)]
pub const DENIED_IOCTLS: [(&str, u64); 2] = [
    ("TIOCSTI", libc::TIOCSTI as u64),
    ("TIOCLINUX", libc::TIOCLINUX as u64),
];

/// `personality` values that only ask or keep the default; any other value (for example
/// ADDR_NO_RANDOMIZE, which turns address randomisation off for what the server execs, or
/// READ_IMPLIES_EXEC) is refused.
pub const PERSONALITY_ALLOWED: [u64; 2] = [0, 0xffff_ffff];

fn condition(
    arg: u8,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, seccompiler::BackendError> {
    // Dword: clone flags, ioctl requests and personality are 32-bit in the kernel; comparing
    // only the low half matches what the kernel acts on (a 64-bit compare could be dodged by
    // setting the unused high bits).
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, SeccompError> {
    SeccompRule::new(conditions).map_err(|e| SeccompError::Build(e.to_string()))
}

/// The rules, by refusal then syscall number; an empty rule list refuses the syscall whatever
/// its arguments, otherwise any matching rule refuses it. `processes` is the grant: 0 refuses
/// every new process (threads stay allowed); above 0 the kernel's RLIMIT_NPROC bounds them.
pub fn rule_map(
    processes: u32,
) -> Result<BTreeMap<Refusal, BTreeMap<i64, Vec<SeccompRule>>>, SeccompError> {
    let build = |e: seccompiler::BackendError| SeccompError::Build(e.to_string());
    let mut eperm: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (_, nr) in always_denied() {
        eperm.insert(nr, Vec::new());
    }

    let mut clone_rules = Vec::new();
    if processes == 0 {
        for (_, nr) in process_creation() {
            eperm.insert(nr, Vec::new());
        }
        // clone(flags, …) without CLONE_THREAD is a new process; with it, a thread.
        clone_rules.push(rule(vec![
            condition(0, SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64), 0).map_err(build)?,
        ])?);
    }
    for (_, flag) in CLONE_NAMESPACE_FLAGS {
        clone_rules.push(rule(vec![
            condition(0, SeccompCmpOp::MaskedEq(flag), flag).map_err(build)?,
        ])?);
    }
    eperm.insert(libc::SYS_clone, clone_rules);

    let mut ioctl_rules = Vec::new();
    for (_, request) in DENIED_IOCTLS {
        ioctl_rules.push(rule(vec![
            condition(1, SeccompCmpOp::Eq, request).map_err(build)?,
        ])?);
    }
    eperm.insert(libc::SYS_ioctl, ioctl_rules);

    let mut personality = Vec::new();
    for allowed in PERSONALITY_ALLOWED {
        personality.push(condition(0, SeccompCmpOp::Ne, allowed).map_err(build)?);
    }
    eperm.insert(libc::SYS_personality, vec![rule(personality)?]);

    let mut enosys: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    enosys.insert(libc::SYS_clone3, Vec::new());

    Ok(BTreeMap::from([
        (Refusal::Eperm, eperm),
        (Refusal::Enosys, enosys),
    ]))
}

/// x32 is a second syscall ABI on x86_64: the same architecture value, syscall numbers with
/// bit 30 set, so a number-based deny list does not see them. This hand-built guard refuses
/// every x32 syscall (seccompiler matches numbers exactly and cannot express the range).
/// Other architectures (i386 through `int 0x80`) are killed by seccompiler's own arch check.
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
// BPF opcodes (linux/bpf_common.h) and seccomp_data offsets (linux/seccomp.h).
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JGE_K: u16 = 0x35;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

pub fn x32_guard() -> BpfProgram {
    let stmt = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        stmt(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        // Not x86_64: nothing for this guard to do.
        stmt(BPF_JMP_JEQ_K, 0, 3, AUDIT_ARCH_X86_64),
        stmt(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
        stmt(BPF_JMP_JGE_K, 0, 1, X32_SYSCALL_BIT),
        stmt(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | Refusal::Enosys.errno()),
        stmt(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
}

/// The compiled programs, in the order they are applied.
pub fn programs(processes: u32) -> Result<Vec<BpfProgram>, SeccompError> {
    let arch = target_arch()?;
    let mut out = Vec::new();
    for (refusal, rules) in rule_map(processes)? {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(refusal.errno()),
            arch,
        )
        .map_err(|e| SeccompError::Build(e.to_string()))?;
        out.push(BpfProgram::try_from(filter).map_err(|e| SeccompError::Build(e.to_string()))?);
    }
    if arch == TargetArch::x86_64 {
        out.push(x32_guard());
    }
    Ok(out)
}

/// Applies the filter to every thread of this process (it also sets no_new_privs, which
/// bubblewrap has already set). Inherited across exec and by every child; cannot be undone.
pub fn apply(processes: u32) -> Result<(), SeccompError> {
    for program in programs(processes)? {
        seccompiler::apply_filter_all_threads(&program)
            .map_err(|e| SeccompError::Apply(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-BPF interpreter for exactly the instructions seccompiler and the x32 guard
    /// emit, so the compiled programs can be run against a syscall without applying them.
    fn run(program: &[sock_filter], nr: i64, arch: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&(nr as u32).to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        for (i, arg) in args.iter().enumerate() {
            let at = 16 + 8 * i;
            data[at..at + 8].copy_from_slice(&arg.to_le_bytes());
        }
        let mut acc: u32 = 0;
        let mut pc = 0usize;
        loop {
            let ins = &program[pc];
            pc += 1;
            let class = ins.code & 0x07;
            match class {
                0x00 => {
                    assert_eq!(ins.code, BPF_LD_W_ABS, "unexpected load {:#x}", ins.code);
                    let at = ins.k as usize;
                    acc = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                }
                0x04 => {
                    assert_eq!(ins.code, 0x54, "unexpected alu {:#x}", ins.code);
                    acc &= ins.k;
                }
                0x05 => {
                    let taken = match ins.code & 0xf0 {
                        0x00 => {
                            pc += ins.k as usize;
                            continue;
                        }
                        0x10 => acc == ins.k,
                        0x20 => acc > ins.k,
                        0x30 => acc >= ins.k,
                        0x40 => acc & ins.k != 0,
                        other => panic!("unexpected jump {other:#x}"),
                    };
                    pc += if taken { ins.jt } else { ins.jf } as usize;
                }
                0x06 => return ins.k,
                other => panic!("unexpected class {other:#x}"),
            }
        }
    }

    const KILL_PROCESS: u32 = 0x8000_0000;

    fn arch() -> u32 {
        if cfg!(target_arch = "x86_64") {
            AUDIT_ARCH_X86_64
        } else {
            183 | 0x8000_0000 | 0x4000_0000
        }
    }

    /// What the stacked programs decide together: the kernel takes the most restrictive
    /// action (kill < errno < allow in the kernel's order of precedence).
    fn verdict(processes: u32, nr: i64, args: [u64; 6]) -> u32 {
        verdict_on(processes, nr, arch(), args)
    }

    fn verdict_on(processes: u32, nr: i64, arch: u32, args: [u64; 6]) -> u32 {
        let rank = |action: u32| match action & 0xffff_0000 {
            KILL_PROCESS => 0,
            0 => 1,
            SECCOMP_RET_ERRNO => 3,
            SECCOMP_RET_ALLOW => 9,
            other => panic!("unexpected action {other:#x}"),
        };
        programs(processes)
            .unwrap()
            .iter()
            .map(|p| run(p, nr, arch, args))
            .min_by_key(|a| rank(*a))
            .unwrap()
    }

    fn eperm() -> u32 {
        SECCOMP_RET_ERRNO | libc::EPERM as u32
    }
    fn enosys() -> u32 {
        SECCOMP_RET_ERRNO | libc::ENOSYS as u32
    }
    const NONE: [u64; 6] = [0; 6];

    fn map(processes: u32) -> BTreeMap<Refusal, BTreeMap<i64, Vec<SeccompRule>>> {
        rule_map(processes).unwrap()
    }

    #[test]
    fn every_always_denied_syscall_is_refused_unconditionally_with_or_without_processes() {
        for processes in [0, 4] {
            let eperm_rules = &map(processes)[&Refusal::Eperm];
            for (name, nr) in always_denied() {
                assert_eq!(eperm_rules.get(&nr), Some(&Vec::new()), "{name}");
                assert_eq!(verdict(processes, nr, NONE), eperm(), "{name}");
                assert_eq!(verdict(processes, nr, [u64::MAX; 6]), eperm(), "{name}");
            }
        }
    }

    #[test]
    fn the_always_denied_list_names_the_design_list() {
        let names: Vec<&str> = always_denied().iter().map(|(n, _)| *n).collect();
        for want in [
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "kexec_load",
            "kexec_file_load",
            "init_module",
            "finit_module",
            "delete_module",
            "mount",
            "umount2",
            "pivot_root",
            "unshare",
            "setns",
            "bpf",
            "perf_event_open",
            "userfaultfd",
            "keyctl",
            "add_key",
            "request_key",
            "open_by_handle_at",
            "name_to_handle_at",
            "swapon",
            "swapoff",
            "reboot",
            "acct",
            "quotactl",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
        ] {
            assert!(names.contains(&want), "{want} missing");
        }
        if cfg!(target_arch = "x86_64") {
            assert!(names.contains(&"iopl") && names.contains(&"ioperm"));
        }
    }

    #[test]
    fn ordinary_syscalls_are_allowed() {
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_execve,
            libc::SYS_socket,
            libc::SYS_connect,
            libc::SYS_mmap,
            libc::SYS_futex,
        ] {
            assert_eq!(verdict(0, nr, NONE), SECCOMP_RET_ALLOW, "{nr}");
            assert!(!map(0)[&Refusal::Eperm].contains_key(&nr));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn fork_and_vfork_are_refused_without_processes_and_allowed_with_them() {
        for nr in [libc::SYS_fork, libc::SYS_vfork] {
            assert_eq!(map(0)[&Refusal::Eperm].get(&nr), Some(&Vec::new()));
            assert_eq!(verdict(0, nr, NONE), eperm());
            assert!(!map(1)[&Refusal::Eperm].contains_key(&nr));
            assert_eq!(verdict(1, nr, NONE), SECCOMP_RET_ALLOW);
        }
    }

    #[test]
    fn clone_of_a_process_is_refused_without_processes_but_threads_are_not() {
        let thread = (libc::CLONE_VM
            | libc::CLONE_FS
            | libc::CLONE_FILES
            | libc::CLONE_SIGHAND
            | libc::CLONE_THREAD
            | libc::CLONE_SYSVSEM
            | libc::CLONE_SETTLS
            | libc::CLONE_PARENT_SETTID
            | libc::CLONE_CHILD_CLEARTID) as u64;
        let fork_like = libc::SIGCHLD as u64;
        let spawn_like = (libc::CLONE_VM | libc::CLONE_VFORK) as u64 | libc::SIGCHLD as u64;
        let args = |flags: u64| [flags, 0, 0, 0, 0, 0];
        assert_eq!(verdict(0, libc::SYS_clone, args(thread)), SECCOMP_RET_ALLOW);
        assert_eq!(verdict(0, libc::SYS_clone, args(fork_like)), eperm());
        assert_eq!(verdict(0, libc::SYS_clone, args(spawn_like)), eperm());
        // High bits set beside CLONE_THREAD's absence change nothing: only the low word counts.
        assert_eq!(
            verdict(0, libc::SYS_clone, args(fork_like | 0xffff_ffff_0000_0000)),
            eperm()
        );
        assert_eq!(
            verdict(4, libc::SYS_clone, args(fork_like)),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(verdict(4, libc::SYS_clone, args(thread)), SECCOMP_RET_ALLOW);
        // The rule itself: a CLONE_THREAD-clear match only when processes is 0.
        let want = SeccompRule::new(vec![
            condition(0, SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64), 0).unwrap(),
        ])
        .unwrap();
        assert!(map(0)[&Refusal::Eperm][&libc::SYS_clone].contains(&want));
        assert!(!map(4)[&Refusal::Eperm][&libc::SYS_clone].contains(&want));
    }

    #[test]
    fn clone_with_a_namespace_flag_is_refused_even_with_processes_or_as_a_thread() {
        let thread = (libc::CLONE_VM | libc::CLONE_SIGHAND | libc::CLONE_THREAD) as u64;
        for (name, flag) in CLONE_NAMESPACE_FLAGS {
            for processes in [0, 4] {
                let args = [libc::SIGCHLD as u64 | flag, 0, 0, 0, 0, 0];
                assert_eq!(verdict(processes, libc::SYS_clone, args), eperm(), "{name}");
                let args = [thread | flag, 0, 0, 0, 0, 0];
                assert_eq!(verdict(processes, libc::SYS_clone, args), eperm(), "{name}");
            }
        }
    }

    #[test]
    fn clone3_says_not_implemented_so_libc_falls_back_to_clone() {
        for processes in [0, 4] {
            let m = map(processes);
            assert_eq!(
                m[&Refusal::Enosys].get(&libc::SYS_clone3),
                Some(&Vec::new())
            );
            assert!(!m[&Refusal::Eperm].contains_key(&libc::SYS_clone3));
            assert_eq!(verdict(processes, libc::SYS_clone3, NONE), enosys());
        }
    }

    #[test]
    #[allow(clippy::unnecessary_cast)] // c_ulong with glibc, c_int with musl
    fn terminal_injection_ioctls_are_refused_and_other_ioctls_are_not() {
        for (name, request) in DENIED_IOCTLS {
            assert_eq!(
                verdict(0, libc::SYS_ioctl, [0, request, 0, 0, 0, 0]),
                eperm(),
                "{name}"
            );
            // The kernel reads the request as 32 bits: high garbage must not slip past.
            assert_eq!(
                verdict(0, libc::SYS_ioctl, [0, request | 0x1_0000_0000, 0, 0, 0, 0]),
                eperm(),
                "{name} with high bits"
            );
        }
        for request in [
            libc::TIOCGWINSZ as u64,
            libc::FIONREAD as u64,
            libc::TCGETS as u64,
        ] {
            assert_eq!(
                verdict(0, libc::SYS_ioctl, [0, request, 0, 0, 0, 0]),
                SECCOMP_RET_ALLOW
            );
        }
    }

    #[test]
    fn personality_may_be_read_or_reset_but_not_changed() {
        for allowed in PERSONALITY_ALLOWED {
            assert_eq!(
                verdict(0, libc::SYS_personality, [allowed, 0, 0, 0, 0, 0]),
                SECCOMP_RET_ALLOW
            );
        }
        let addr_no_randomize = 0x0040000;
        let read_implies_exec = 0x0400000;
        for refused in [addr_no_randomize, read_implies_exec, 0x0008] {
            assert_eq!(
                verdict(0, libc::SYS_personality, [refused, 0, 0, 0, 0, 0]),
                eperm()
            );
        }
    }

    #[test]
    fn a_foreign_architecture_is_killed_and_x32_syscalls_are_refused() {
        let i386 = 3 | 0x4000_0000;
        assert_eq!(verdict_on(4, libc::SYS_read, i386, NONE), KILL_PROCESS);
        if cfg!(target_arch = "x86_64") {
            // x32's fork: same number, bit 30 set, same arch value.
            let x32_fork = X32_SYSCALL_BIT as i64 | 57;
            assert_eq!(verdict(4, x32_fork, NONE), enosys());
            assert_eq!(
                run(&x32_guard(), libc::SYS_read, arch(), NONE),
                SECCOMP_RET_ALLOW
            );
            assert_eq!(run(&x32_guard(), x32_fork, arch(), NONE), enosys());
        }
    }

    #[test]
    fn refusals_map_to_their_errnos() {
        assert_eq!(Refusal::Eperm.errno(), 1);
        assert_eq!(Refusal::Enosys.errno(), 38);
    }
}
