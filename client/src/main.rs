//! `segi-client`: the command line over the `segi_client` library (see `segi-client help`).

mod cli;

use std::process::ExitCode;

use clap::Parser as _;
use segi_client::report::CLIENT_FAILURE;

fn main() -> ExitCode {
    let cli = match cli::args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // Help and --version go to stdout and succeed; usage errors are client failures.
            let status = if error.use_stderr() { CLIENT_FAILURE } else { 0 };
            let _ = error.print();
            return ExitCode::from(status);
        }
    };
    match cli::main(cli) {
        Ok(status) => ExitCode::from(status),
        Err(error) => {
            eprintln!("segi-client: {error:#}");
            ExitCode::from(CLIENT_FAILURE)
        }
    }
}
