//! KVM exit reasons by name, read from the `kvm/kvm_exit` event's own `format` file: its print
//! format names each reason in a `__print_symbolic` table - the kernel's `kvm_print_exit_reason`
//! (arch/x86/kvm/trace.h) picks VMX's table when the event's `isa` is 1 (`KVM_ISA_VMX`), else
//! SVM's, in that order. Reading the kernel's own tables keeps the names right for the running
//! kernel and both vendors; libtraceevent does the same when it prints the event. Written by
//! hand: no maintained Rust crate parses ftrace print formats, and only these tables are needed.

/// `KVM_ISA_VMX` (arch/x86/kvm/trace.h): the event's `isa` on Intel.
const ISA_VMX: u32 = 1;
/// A VMX exit reason's basic reason (the high bits are flags).
const VMX_BASIC_REASON: u32 = 0xffff;

/// The exit-reason tables of one kernel's `kvm_exit` event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitReasons {
    /// `__print_symbolic` tables in the order the print format has them: VMX's, then SVM's.
    tables: Vec<Vec<(u64, String)>>,
}

impl ExitReasons {
    /// The tables of a `format` file's text (none when it has none: reasons are then numbers).
    pub fn parse(format_text: &str) -> ExitReasons {
        let print_fmt = format_text.split_once("print fmt:").map_or("", |(_, f)| f);
        ExitReasons { tables: symbolic_tables(print_fmt) }
    }

    /// The name of exit `reason` on `isa` (the event's fields), or `exit <reason>`.
    pub fn name(&self, reason: u32, isa: Option<u32>) -> String {
        let (table, reason) = match (isa, self.tables.len()) {
            (Some(ISA_VMX) | None, _) | (_, 0 | 1) => (self.tables.first(), reason & VMX_BASIC_REASON),
            _ => (self.tables.get(1), reason),
        };
        let named = table.and_then(|t| t.iter().find(|(value, _)| *value == u64::from(reason)));
        named.map_or_else(|| format!("exit {reason}"), |(_, name)| name.clone())
    }
}

/// Every `__print_symbolic(value, { N, "NAME" }, ...)` table in `print_fmt`, in order.
fn symbolic_tables(print_fmt: &str) -> Vec<Vec<(u64, String)>> {
    print_fmt.split("__print_symbolic(").skip(1).map(|rest| entries(until_close(rest))).collect()
}

/// `text` up to the parenthesis that closes the one opened before it (quoted text skipped).
fn until_close(text: &str) -> &str {
    let (mut depth, mut quoted) = (0usize, false);
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth == 0 => return &text[..i],
            ')' if !quoted => depth -= 1,
            _ => {}
        }
    }
    text
}

/// The `{ N, "NAME" }` entries of a table (N a sum of decimal or 0x-hex terms, or -1, as the
/// 32-bit `exit_reason` holds it); anything else is skipped.
fn entries(table: &str) -> Vec<(u64, String)> {
    table
        .split('{')
        .skip(1)
        .filter_map(|entry| {
            let (value, rest) = entry.split_once(',')?;
            let name = rest.split('"').nth(1)?;
            Some((number(value.trim())?, name.to_string()))
        })
        .collect()
}

fn number(text: &str) -> Option<u64> {
    let term = |t: &str| match t.trim().strip_prefix("0x").or_else(|| t.trim().strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => t.trim().parse::<i64>().ok(),
    };
    let sum = text.split('+').map(term).try_fold(0i64, |a, t| a.checked_add(t?))?;
    Some(u64::from(sum as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of x86's `kvm_exit` format (Linux 6.1), its tables shortened.
    const FORMAT: &str = "name: kvm_exit\nID: 1834\nformat:\n\
        \tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n\
        \tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;\n\n\
        print fmt: \"vcpu %u reason %s%s%s rip 0x%lx\", REC->vcpu_id, (REC->isa == 1) ? \
        __print_symbolic(REC->exit_reason & 0xffff, { 0, \"EXCEPTION_NMI\" }, { 1, \"EXTERNAL_INTERRUPT\" }, \
        { 12, \"HLT\" }, { 48, \"EPT_VIOLATION\" }) : __print_symbolic(REC->exit_reason, { 0x000, \"read_cr0\" }, \
        { 0x060, \"interrupt\" }, { 0x078, \"hlt\" }, { 0x400, \"npf\" }), (REC->isa == 1 && REC->exit_reason & \
        ~0xffff) ? \" \" : \"\", (REC->isa == 1) ? __print_flags(REC->exit_reason & ~0xffff, \" \", \
        { 0x80000000, \"FAILED_VMENTRY\" }) : \"\", REC->guest_rip\n";

    #[test]
    fn exit_reasons_are_named_from_the_kernels_own_tables() {
        let reasons = ExitReasons::parse(FORMAT);
        assert_eq!(reasons.name(12, Some(1)), "HLT");
        assert_eq!(reasons.name(0x8000_0001, Some(1)), "EXTERNAL_INTERRUPT", "VMX flags are not the reason");
        assert_eq!(reasons.name(0x78, Some(2)), "hlt", "SVM's table");
        assert_eq!(reasons.name(0x400, Some(2)), "npf");
        assert_eq!(reasons.name(1, None), "EXTERNAL_INTERRUPT", "no isa field: the first table");
        assert_eq!(reasons.name(99, Some(1)), "exit 99", "a reason the table lacks");
        assert_eq!(ExitReasons::parse("print fmt: \"reason %u\", REC->exit_reason").name(12, Some(1)), "exit 12");
    }

    /// The real `kvm_exit` format of this project's development host (Linux 6.x, x86).
    #[test]
    fn the_running_kernels_format_names_vmx_and_svm_exits() {
        let reasons = ExitReasons::parse(include_str!("testdata/kvm_exit.format"));
        assert_eq!(reasons.name(12, Some(1)), "HLT");
        assert_eq!(reasons.name(48, Some(1)), "EPT_VIOLATION");
        assert_eq!(reasons.name(0x8000_0000 | 33, Some(1)), "INVALID_STATE", "VMENTRY failure flag");
        assert_eq!(reasons.name(0x40 + 14, Some(2)), "PF excp", "an entry written as a sum");
        assert_eq!(reasons.name(0x78, Some(2)), "hlt");
        assert_eq!(reasons.name(0x8000_0001, Some(2)), "vmgexit_mmio_read");
        assert_eq!(reasons.name(u32::MAX, Some(2)), "invalid_guest_state", "-1");
    }

    #[test]
    fn tables_end_at_their_own_parenthesis() {
        let tables =
            symbolic_tables("__print_symbolic(REC->x, { 1, \"A)\" }, { 0x2, \"B\" }) : f(REC->y, { 3, \"C\" })");
        assert_eq!(tables, [vec![(1, "A)".to_string()), (2, "B".to_string())]]);
    }
}
