//! From the parsed command line to the command's module: the one place that knows them all.

use crate::cli::{Cli, Command};
use crate::commands::Context;
use crate::failure::Failure;

pub async fn run(cli: Cli) -> Result<u8, Failure> {
    let own_host = crate::commands::own_host_flags(&cli.flags);
    let context = Context::from_flags(&cli.flags)?;
    match cli.command {
        Command::Servers(command) => crate::servers::run(&context, command).await,
        Command::Secret(command) => crate::secret::run(&context, command).await,
        Command::Auth(command) => crate::auth::run(&context, command).await,
        Command::Connect(target) => crate::tools::connect_command(&context, &target).await,
        Command::Tools(args) => crate::tools::tools(&context, &args).await,
        Command::Audit(command) => crate::audit::run(&context, command),
        Command::Trust => crate::trust::run(&context),
        Command::Call(args) => crate::tools::call(&context, &args).await,
        Command::Trace(args) => crate::tools::trace(&context, &args).await,
        // One entry of a kind, or proposals from a registry document or a client's config,
        // each of which runs through `add_server::run` again with one kind set.
        Command::Bundle(crate::cli::BundleCommand::AddServer(args)) => {
            match (&args.from_registry, args.from_client) {
                (Some(file), _) => crate::from_registry::run(&context, &args, file).await,
                (None, Some(client)) => crate::from_client::run(&context, &args, client).await,
                (None, None) => crate::add_server::run(&context, &args).await,
            }
        }
        Command::Bundle(command) => crate::admin::bundle(&context, command),
        Command::Attest(command) => crate::admin::attest_async(&context, command).await,
        Command::Conformance { url } => crate::conformance::run(&context, &url).await,
        Command::Policy(command) => crate::policy::run(&context, command),
        Command::Serve(args) => crate::serve::run(&context, &args, &own_host).await,
        Command::Clients(command) => crate::clients::run(&context, command).await,
        Command::Resources(args) => crate::resources::resources(&context, &args).await,
        Command::Read(args) => crate::resources::read(&context, &args).await,
        Command::Prompts(args) => crate::prompts::prompts(&context, &args).await,
        Command::Prompt(args) => crate::prompts::prompt(&context, &args).await,
        Command::Complete(args) => crate::prompts::complete(&context, &args).await,
        Command::Subscribe(args) => crate::resources::subscribe(&context, &args).await,
    }
}
