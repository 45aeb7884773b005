//! `gatehouse-background [--demo] [--policy FILE] [--posture POSTURE] [--no-bridge]`: the
//! Gatehouse host without its window (see the library). The window starts it; it can also be
//! started at login. Exits 0 at once when a host already serves this user.

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("GATEHOUSE_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let launch = match gatehouse_desk::Launch::from_args(std::env::args()) {
        Ok(launch) => launch,
        Err(message) => {
            eprintln!("gatehouse-background: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let setup = match gatehouse_background::setup_from_env(&launch) {
        Ok(setup) => setup,
        Err(message) => {
            eprintln!("gatehouse-background: {message}");
            return std::process::ExitCode::from(1);
        }
    };
    // Few threads: the host mostly waits (the memory target counts every thread's stack).
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("gatehouse-background: no async runtime: {error}");
            return std::process::ExitCode::from(1);
        }
    };
    let socket = setup.desk_socket.clone();
    let outcome = runtime.block_on(gatehouse_background::run(launch, setup));
    // Connections still open (bridge clients) close now, with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match outcome {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!(
                "gatehouse-background: Gatehouse already runs for you (its window socket is {}); nothing to do",
                socket.display()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("gatehouse-background: {message}");
            std::process::ExitCode::from(1)
        }
    }
}
