//! Resource limits the init sets on itself before it becomes the server (inherited across exec
//! and by every child).

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Threads count against RLIMIT_NPROC too: a granted process count gets this many more so
/// thread pools (V8, libuv, Python executors) keep working.
pub const NPROC_THREAD_HEADROOM: u64 = 512;
/// Open files, at most (lower when the hard limit already is).
pub const MAX_OPEN_FILES: u64 = 4096;

/// One limit to set: soft and hard together, so the server cannot raise it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub resource: Resource,
    pub value: u64,
}

/// What [`apply`] sets for these grants, given the current hard limit on open files.
/// RLIMIT_DATA, not RLIMIT_AS: V8 reserves large address ranges it never backs, which an
/// address-space bound would refuse. RLIMIT_NPROC only when processes are granted (seccomp
/// refuses all new processes otherwise); note that the kernel does not apply it to uid 0.
pub fn plan(memory_mib: u32, processes: u32, nofile_hard: u64) -> Vec<Limit> {
    let mut out = vec![
        Limit {
            resource: Resource::RLIMIT_DATA,
            value: u64::from(memory_mib) * 1024 * 1024,
        },
        Limit {
            resource: Resource::RLIMIT_CORE,
            value: 0,
        },
        Limit {
            resource: Resource::RLIMIT_NOFILE,
            value: nofile_hard.min(MAX_OPEN_FILES),
        },
    ];
    if processes > 0 {
        out.push(Limit {
            resource: Resource::RLIMIT_NPROC,
            value: u64::from(processes) + NPROC_THREAD_HEADROOM,
        });
    }
    out
}

pub fn apply(memory_mib: u32, processes: u32) -> Result<(), String> {
    let (_, nofile_hard) = getrlimit(Resource::RLIMIT_NOFILE)
        .map_err(|e| format!("could not read the open-file limit: {e}"))?;
    for limit in plan(memory_mib, processes, nofile_hard) {
        setrlimit(limit.resource, limit.value, limit.value).map_err(|e| {
            format!(
                "could not set {:?} to {} ({e}); the server was not started",
                limit.resource, limit.value
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(limits: &[Limit], resource: Resource) -> Option<u64> {
        limits
            .iter()
            .find(|l| l.resource == resource)
            .map(|l| l.value)
    }

    #[test]
    fn memory_is_the_data_segment_in_mebibytes_and_cores_are_off() {
        let limits = plan(256, 0, 1 << 20);
        assert_eq!(value(&limits, Resource::RLIMIT_DATA), Some(256 << 20));
        assert_eq!(value(&limits, Resource::RLIMIT_CORE), Some(0));
        assert_eq!(value(&limits, Resource::RLIMIT_AS), None);
        // The largest grant does not overflow.
        let limits = plan(gatehouse_confine::MAX_MEMORY_MIB, 0, 1 << 20);
        assert_eq!(value(&limits, Resource::RLIMIT_DATA), Some(65536u64 << 20));
    }

    #[test]
    fn open_files_are_at_most_4096_and_never_raised() {
        assert_eq!(
            value(&plan(1, 0, 1 << 20), Resource::RLIMIT_NOFILE),
            Some(4096)
        );
        assert_eq!(
            value(&plan(1, 0, 1024), Resource::RLIMIT_NOFILE),
            Some(1024)
        );
    }

    #[test]
    fn nproc_only_when_processes_are_granted_with_room_for_threads() {
        assert_eq!(value(&plan(1, 0, 4096), Resource::RLIMIT_NPROC), None);
        assert_eq!(value(&plan(1, 4, 4096), Resource::RLIMIT_NPROC), Some(516));
    }
}
