//! rtla's actions for `measure timer`: `--on-threshold ACTION` when `--break`/`--stop-at` stopped
//! the run at a wake-up above its limit, `--on-end ACTION` when the run ends. The actions and
//! their syntax are rtla timerlat's: `trace` (keep the trace: what `--break` does), `shell,command=CMD`
//! (run with `sh -c`), `signal,num=N,pid=PID` (`pid=parent`: rtvirt's parent), `continue` (rtla's
//! own; refused here: the measuring threads have stopped).

use anyhow::Context as _;
use rtvirt_model::InputError;
use std::process::Command;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Trace,
    Shell(String),
    Signal { num: i32, pid: u32 },
}

/// `ACTION[,key=value...]` of `flag`.
pub fn parse(flag: &str, text: &str) -> Result<Action, InputError> {
    let bad = |m: String| InputError::field(flag, format!("{text:?}: {m}"));
    let (name, rest) = text.split_once(',').unwrap_or((text, ""));
    let arg = |key: &str| {
        rest.split(',').find_map(|kv| kv.split_once('=').filter(|(k, _)| k.trim() == key).map(|(_, v)| v.to_string()))
    };
    match name.trim() {
        "trace" => Ok(Action::Trace),
        "shell" => {
            // command= takes the rest of the text, commas included
            let command = rest.trim_start().strip_prefix("command=").map(str::to_string);
            command
                .filter(|c| !c.trim().is_empty())
                .map(Action::Shell)
                .ok_or_else(|| bad("expected shell,command=CMD".into()))
        }
        "signal" => {
            let num = arg("num").and_then(|n| n.trim().parse().ok()).filter(|&n| n > 0 && n < 65);
            let pid = match arg("pid").as_deref().map(str::trim) {
                Some("parent") => Some(std::os::unix::process::parent_id()),
                Some(p) => p.parse().ok().filter(|&p: &u32| p > 0),
                None => None,
            };
            match (num, pid) {
                (Some(num), Some(pid)) => Ok(Action::Signal { num, pid }),
                _ => Err(bad("expected signal,num=N,pid=PID (N 1..64; PID a process id or parent)".into())),
            }
        }
        "continue" => Err(bad("rtvirt stops its measuring threads at --break: there is nothing to continue".into())),
        other => {
            Err(bad(format!("unknown action {other:?}: expected trace, shell,command=CMD or signal,num=N,pid=PID")))
        }
    }
}

/// Run the actions, in order; a shell command's failure or a signal that cannot be sent is an error.
pub fn run(flag: &str, actions: &[Action]) -> anyhow::Result<()> {
    for a in actions {
        match a {
            Action::Trace => {}
            Action::Shell(command) => {
                let status =
                    Command::new("sh").arg("-c").arg(command).status().with_context(|| format!("{flag}: sh"))?;
                anyhow::ensure!(status.success(), "{flag}: shell command {command:?} exited with {status}");
            }
            Action::Signal { num, pid } => {
                let status = Command::new("kill").arg(format!("-{num}")).arg(pid.to_string()).status()?;
                anyhow::ensure!(status.success(), "{flag}: cannot send signal {num} to process {pid}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtla_syntax_is_read() {
        assert_eq!(parse("--on-end", "trace").unwrap(), Action::Trace);
        assert_eq!(parse("--on-end", "shell,command=echo a,b").unwrap(), Action::Shell("echo a,b".into()));
        assert_eq!(parse("--on-end", "signal,num=2,pid=42").unwrap(), Action::Signal { num: 2, pid: 42 });
        for bad in ["shell", "signal,num=2", "signal,num=99,pid=1", "continue", "stop"] {
            assert!(parse("--on-end", bad).unwrap_err().to_string().contains("--on-end"), "{bad}");
        }
    }
}
