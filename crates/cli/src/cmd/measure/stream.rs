//! `rtvirt measure net client --stream`: bulk throughput to a net server (on this host, in a
//! container, in a guest), placed like the round-trip client.

use super::args::ClientArgs;
use super::output::progress;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::placement::command_line::CommandLine;
use crate::placement::options::Common;
use crate::placement::{drive, Measurement, Role};
use crate::table::Table;
use rtvirt_model::results::{Results, StreamSection};
use rtvirt_model::Nanos;
use rtvirt_probe::net::stream;
use std::net::SocketAddr;

struct StreamClient {
    args: ClientArgs,
    config: stream::StreamConfig,
}

/// Check the stream's options, then measure where `--in` says.
pub fn run(args: ClientArgs, line: CommandLine) -> CmdResult {
    let config = stream::StreamConfig {
        connect: args.connect,
        protocol: args.proto.protocol(),
        message_size: args.message_size,
        duration: args.duration,
        interval: args.report_interval,
        timeout: args.timeout,
        force: args.common.force,
        target_bits_per_second: args.bandwidth,
    };
    config.validate()?;
    let paced = config.target_bits_per_second.map(|b| format!(", paced to {} Mbit/s", mbits(b))).unwrap_or_default();
    let what =
        format!("streaming {} ({} B messages{paced}) to {}", config.protocol.as_str(), config.size(), config.connect);
    progress(args.duration, &what);
    drive(StreamClient { args, config }, line)
}

impl Measurement for StreamClient {
    fn common(&self) -> &Common {
        &self.args.common
    }

    fn duration(&self) -> Nanos {
        self.args.duration
    }

    fn role(&self) -> Role {
        let a = &self.args;
        Role::Client { port: a.connect.port(), tcp: a.proto.tcp, timeout: a.timeout }
    }

    fn measure(&mut self, server: Option<SocketAddr>) -> anyhow::Result<Results> {
        if let Some(server) = server {
            self.config.connect = server;
        }
        Ok(stream::run(&self.config)?)
    }

    fn report(&self, results: &Results) -> CmdResult {
        match self.args.common.format {
            Format::Json => print_json(results)?,
            Format::Table => print_table(results.stream.as_ref().expect("a stream's results have its section")),
        }
        Ok(Outcome::Ok)
    }
}

fn mbits(bits_per_second: f64) -> String {
    format!("{:.1}", bits_per_second / 1e6)
}

fn print_table(s: &StreamSection) {
    let mut table = Table::new(&["interval", "sent Mbit/s", "received Mbit/s", "lost"], 1);
    let optional = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for i in &s.intervals {
        table.row([
            format!("{:.2}-{:.2} s", i.start_ns as f64 / 1e9, i.end_ns as f64 / 1e9),
            mbits(i.sent_bits_per_second),
            optional(i.received_bits_per_second.map(mbits)),
            optional(i.lost_messages.map(|l| l.to_string())),
        ]);
    }
    table.row([
        "overall".to_string(),
        mbits(s.sent_bits_per_second),
        optional(s.received_bits_per_second.map(mbits)),
        optional(s.lost_messages.map(|l| l.to_string())),
    ]);
    table.print();
    let percent = |u: f64| format!("{:.0}%", u * 100.0);
    let paced = s.target_bits_per_second.map(|b| format!(" paced to {} Mbit/s", mbits(b))).unwrap_or_default();
    println!(
        "{} stream to {}, {} B messages{paced}: sender CPU {}, receiver CPU {}{}",
        s.protocol,
        s.server,
        s.message_size,
        percent(s.sender_cpu_utilisation),
        optional(s.receiver_cpu_utilisation.map(percent)),
        match (s.loss_ratio, &s.receiver) {
            (Some(loss), _) => format!(", loss {:.2}%", loss * 100.0),
            (None, None) => ", no receipt from the server".into(),
            _ => String::new(),
        }
    );
}
