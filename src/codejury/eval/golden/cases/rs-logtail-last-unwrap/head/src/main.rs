//! `logtail`: prints the last lines of a log file that contain a level (ERROR by default).

use std::collections::VecDeque;
use std::env;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::process::ExitCode;

struct Options {
    path: String,
    level: String,
    last: usize,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut path = None;
    let mut level = "ERROR".to_string();
    let mut last = 20;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--level" => level = args.next().ok_or("--level needs a value")?.to_uppercase(),
            "--last" => last = args.next().unwrap().parse().unwrap(),
            _ if path.is_none() => path = Some(arg),
            other => return Err(format!("unexpected argument: {other}")),
        }
    }
    let path = path.ok_or("usage: logtail <file> [--level LEVEL] [--last N]")?;
    Ok(Options { path, level, last })
}

fn run(opts: &Options) -> io::Result<()> {
    let reader = BufReader::new(File::open(&opts.path)?);
    let mut tail = VecDeque::new();
    for line in reader.lines() {
        let line = line?;
        if line.contains(&opts.level) {
            tail.push_back(line);
            if tail.len() > opts.last {
                tail.pop_front();
            }
        }
    }
    for line in tail {
        println!("{line}");
    }
    Ok(())
}

fn main() -> ExitCode {
    let opts = match parse_args(env::args().skip(1)) {
        Ok(opts) => opts,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    if let Err(err) = run(&opts) {
        eprintln!("logtail: {}: {err}", opts.path);
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
