//! How values that rtvirt did not write (guest and task names from scenarios and CARTS files,
//! thread ids) appear in emitted text: as one shell word, or on one comment line.

use rtvirt_model::plan::{GuestPlan, Plan};
use rtvirt_model::InputError;

/// One file of emitted settings: its name, its text, and whether it is a script to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmittedFile {
    pub name: String,
    pub text: String,
    pub executable: bool,
}

/// Shell variable holding a guest's vCPU thread id when no `--pid` was given: `VCPU_PID_<NAME>`
/// with every character outside `[A-Za-z0-9]` replaced by `_`.
pub fn pid_variable(guest: &str) -> String {
    let name: String =
        guest.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("VCPU_PID_{name}")
}

/// `value` as one shell word (POSIX sh, bash, dash): quoted by the `shlex` crate so that no
/// character of it is interpreted (`$`, backticks, `;`, newlines stay literal). A NUL byte cannot
/// be passed to a command at all: an error naming the field.
pub fn shell_word(value: &str, field: impl FnOnce() -> String) -> Result<String, InputError> {
    shlex::try_quote(value).map(|q| q.into_owned()).map_err(|_| {
        InputError::field(field(), format!("{value:?} holds a NUL character, which no shell command can receive"))
    })
}

/// `value` for a shell or XML comment: double-quoted with Rust's string escapes (`\n`, `\"`,
/// `\u{1b}`), so that it stays on its comment line whatever it holds.
pub fn comment_word(value: &str) -> String {
    format!("{value:?}")
}

/// Field path of a planned guest's name, for errors.
pub fn guest_field(plan: &Plan, guest: &GuestPlan) -> String {
    let index = plan.guests.iter().position(|g| std::ptr::eq(g, guest)).unwrap_or(0);
    format!("guest[{index}].name")
}

/// The guests the plan placed, with their core.
pub fn placed(plan: &Plan) -> impl Iterator<Item = (&GuestPlan, u32)> {
    plan.guests.iter().filter_map(|g| g.core.map(|c| (g, c)))
}

/// The cores the plan places guests' vCPUs on, ascending, each once.
pub fn used_cores(plan: &Plan) -> Vec<u32> {
    let mut cores: Vec<u32> = placed(plan).flat_map(|(g, _)| g.vcpu_plans()).filter_map(|v| v.core).collect();
    cores.sort_unstable();
    cores.dedup();
    cores
}

/// Host cores that no guest uses (for emulator threads, iothreads and the host itself), as a
/// cpuset list ("2,3"); None when every core of the plan's host hosts a guest.
pub fn housekeeping(plan: &Plan) -> Option<String> {
    let used = used_cores(plan);
    let n = plan.settings.cores.unwrap_or(0);
    let free: Vec<String> = (0..n).filter(|c| !used.contains(c)).map(|c| c.to_string()).collect();
    (!free.is_empty()).then(|| free.join(","))
}

/// Host cores that hold no vCPU with a reservation (only vCPUs without one, under FIFO), as a
/// cpuset list; None when every core of the plan's host holds a reserved vCPU.
pub fn unreserved_cores(plan: &Plan) -> Option<String> {
    let reserved: Vec<u32> =
        placed(plan).flat_map(|(g, _)| g.vcpu_plans()).filter(|v| v.reserved()).filter_map(|v| v.core).collect();
    let n = plan.settings.cores.unwrap_or(0);
    let free: Vec<String> = (0..n).filter(|c| !reserved.contains(c)).map(|c| c.to_string()).collect();
    (!free.is_empty()).then(|| free.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_and_words() {
        assert_eq!(pid_variable("vm-1.a"), "VCPU_PID_VM_1_A");
        assert_eq!(shell_word("a$(touch x)", String::new).unwrap(), "'a$(touch x)'");
        assert!(shell_word("a\0b", || "guest[0].name".into()).unwrap_err().to_string().contains("guest[0].name"));
        assert_eq!(comment_word("a\nb"), "\"a\\nb\"");
    }
}
