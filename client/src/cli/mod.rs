//! `segi-client`'s subcommands. Each turns its arguments into requests, then prints the
//! answers for a person or, with `--json`, as JSON Lines.

pub mod args;
mod evaluate;
mod grade;
mod info;
mod judge;
mod problem_dir;
mod run;

use std::path::PathBuf;

use anyhow::Context as _;
use segi_client::{default_socket, Client};

use args::{Cli, Command};

/// Runs one command line; the answer is the exit status.
pub fn main(cli: Cli) -> anyhow::Result<u8> {
    // One thread is enough for one connection, and it makes a slow stdout slow down the
    // reading of the socket instead of piling output up in memory.
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the async runtime")?;
    let Cli { socket, json, command } = cli;
    runtime.block_on(async move {
        match command {
            Command::Ping => info::ping(&connect(socket).await?, json).await,
            Command::Capabilities => info::capabilities(&connect(socket).await?, json).await,
            Command::Run(args) => run::run(socket, json, args).await,
            Command::Evaluate(args) => evaluate::evaluate(socket, json, args).await,
            Command::Judge(args) => judge::judge(socket, json, args).await,
            Command::Grade(args) => grade::grade(socket, json, args).await,
        }
    })
}

/// Connects to `--socket`, or to the default socket when none was given.
async fn connect(socket: Option<PathBuf>) -> anyhow::Result<Client> {
    let socket = match socket {
        Some(socket) => socket,
        None => default_socket()?,
    };
    Ok(Client::connect(socket).await?)
}
