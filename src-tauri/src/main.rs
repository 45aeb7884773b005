// No console window on Windows release builds; Gatehouse targets Linux, but it costs nothing.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() -> std::process::ExitCode {
    let started = std::time::Instant::now();
    if let Some(value) = gatehouse_desktop::cpu_painting_default(
        std::env::var_os(gatehouse_desktop::WEBKIT_CPU_PAINTING_SWITCH).as_deref(),
    ) {
        // SAFETY: first thing in main, before any thread exists that could read the
        // environment; WebKit (and its child processes) read it later.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var(gatehouse_desktop::WEBKIT_CPU_PAINTING_SWITCH, value)
        };
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("GATEHOUSE_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let launch =
        match gatehouse_desktop::Launch::from_args_with(std::env::args(), |arg| arg == "--quit") {
            // `--quit`: ask the running host to quit, say what stopped, and open no window.
            Ok((_, own)) if !own.is_empty() => {
                return match gatehouse_desktop::quit_running_host() {
                    Ok(said) => {
                        println!("{said}");
                        std::process::ExitCode::SUCCESS
                    }
                    Err(message) => {
                        eprintln!("gatehouse-desktop: {message}");
                        std::process::ExitCode::from(1)
                    }
                };
            }
            Ok((launch, _)) => gatehouse_desktop::Launch {
                started: Some(started),
                ..launch
            },
            Err(message) => {
                eprintln!("gatehouse-desktop: {message}");
                return std::process::ExitCode::from(2);
            }
        };
    match gatehouse_desktop::run(launch) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("gatehouse-desktop: {message}");
            std::process::ExitCode::from(1)
        }
    }
}
