//! Closed string vocabularies of the documents as enums: a field that holds one of a few words is
//! compared by variant, not by string literal. Each is written as its word and read back from any
//! string: a word this version does not know is kept as `Unknown(word)` and written back as read,
//! so documents stay byte-identical and their schemas are those of strings.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

/// An enum of words with an `Unknown(String)` fallback, serialised as its word.
macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $word:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A word this version does not know, kept as read.
            Unknown(String),
        }

        impl $name {
            /// The word, as written in documents.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $word,)*
                    $name::Unknown(word) => word,
                }
            }
        }

        /// The empty word (what an empty string field was).
        impl Default for $name {
            fn default() -> $name {
                $name::Unknown(String::new())
            }
        }

        impl From<&str> for $name {
            fn from(word: &str) -> $name {
                match word {
                    $($word => $name::$variant,)*
                    other => $name::Unknown(other.to_string()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                Ok($name::from(String::deserialize(deserializer)?.as_str()))
            }
        }

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                String::schema_name()
            }
            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                String::json_schema(generator)
            }
        }
    };
}

vocabulary! {
    /// Where a measurement ran (`environment.in`).
    MeasuredIn {
        Host = "host",
        Container = "container",
        Vm = "vm",
        Simulation = "simulation",
    }
}

vocabulary! {
    /// What a load that ran beside a measurement did (`LoadReport.kind`).
    LoadKind {
        Net = "net",
        NetUdp = "net-udp",
        Syscalls = "syscalls",
        Cache = "cache",
        Cpu = "cpu",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_and_write_back_as_themselves_known_or_not() {
        for word in ["host", "container", "vm", "simulation", "moon"] {
            let json = format!("\"{word}\"");
            let read: MeasuredIn = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&read).unwrap(), json);
            assert_eq!(read.as_str(), word);
        }
        assert_eq!(MeasuredIn::from("vm"), MeasuredIn::Vm);
        assert_eq!(MeasuredIn::from("moon"), MeasuredIn::Unknown("moon".into()));
        assert_eq!(LoadKind::from("net-udp"), LoadKind::NetUdp);
        assert_eq!(LoadKind::NetUdp.to_string(), "net-udp");
    }

    #[test]
    fn the_schema_is_a_strings() {
        let mut generator = SchemaGenerator::default();
        assert_eq!(MeasuredIn::json_schema(&mut generator), String::json_schema(&mut generator));
    }
}
