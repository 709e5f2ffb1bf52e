//! `rtvirt import`: other tools' outputs (cyclictest, cyclicdeadline, oslat, rtla, sockperf,
//! netperf, iperf3) -> `rtvirt.results/v1` JSON; the work is rtvirt-import's.

use crate::cli_common::{CmdResult, Outcome};
use clap::Args;
use rtvirt_import::{import_file, Tool};
use std::path::{Path, PathBuf};

#[derive(Args)]
#[command(after_help = "Read: cyclictest histograms (-h/-H, with overflows and one column per thread), its status \
lines and --json; cyclicdeadline; oslat; rtla timerlat and osnoise (top and hist; timerlat's IRQ and thread latency \
become two documents); sockperf ping-pong / under-load (and its --full-log file); netperf RR and STREAM (classic, \
-o CSV or -k key=value output, latency selectors incl. percentiles); iperf3 --json. The tool, its version and \
command line are kept in environment.tool* where the output records them. `rtvirt report` reads these files \
directly, too.

Examples:
  cyclictest -m -p 95 -i 200 -D 60 -h 400 -q > old.txt
  rtvirt import old.txt -o old.json
  rtvirt import --tool netperf rr.txt stream.txt -o netperf.json")]
pub struct ImportArgs {
    /// Tool outputs to read (the tool is recognised from each file's lines).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The tool that wrote every FILE, when it is not recognised: cyclictest, cyclicdeadline,
    /// oslat, rtla-timerlat, rtla-osnoise, sockperf, netperf, iperf3.
    #[arg(long, value_name = "NAME", value_parser = Tool::from_name)]
    pub tool: Option<Tool>,
    /// Where to write the results ("-" for standard output): one document, or a JSON array when
    /// the files give several (each labelled by its file).
    #[arg(short, long, value_name = "PATH", default_value = "-")]
    pub output: PathBuf,
    /// Output format: the results are JSON documents (rtvirt.results/v1).
    #[arg(long, value_enum, default_value_t = crate::cli_common::JsonOnly::Json)]
    pub format: crate::cli_common::JsonOnly,
}

pub fn run(args: ImportArgs) -> CmdResult {
    let crate::cli_common::JsonOnly::Json = args.format;
    let inputs: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
    crate::output_file::check("--output", &args.output, &inputs)?;
    let mut docs = Vec::new();
    for path in &args.files {
        docs.push((path, import_file(path, args.tool)?));
    }
    let several = docs.iter().map(|(_, d)| d.len()).sum::<usize>() > 1;
    let mut all = Vec::new();
    for (path, results) in docs {
        for mut r in results {
            if several {
                let stem = stem(path);
                r.label = Some(match r.label.take() {
                    Some(part) => format!("{stem}: {part}"),
                    None => stem,
                });
            }
            all.push(r);
        }
    }
    let text = match &all[..] {
        [one] => serde_json::to_string_pretty(one)?,
        _ => serde_json::to_string_pretty(&all)?,
    };
    if args.output == Path::new("-") {
        println!("{text}");
    } else {
        std::fs::write(&args.output, text + "\n")
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", args.output.display()))?;
        eprintln!("{} results document(s) written to {}", all.len(), args.output.display());
    }
    Ok(Outcome::Ok)
}

fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned())
}
