//! The functions serde and schemars attributes of the results types name.

use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Serialize `value` through `serde_json::Value`, so that the keys of every object in it come
/// out in order (`serialize_with` for values once kept as JSON values).
pub(crate) fn sorted<T: Serialize, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value).map_err(S::Error::custom)?.serialize(serializer)
}

/// `server` is the server's address in a `net` result and its counts in a `net-server` one: the
/// schema takes either (the generated one has only the section flattened last).
pub(crate) fn server_either(schema: &mut schemars::Schema) {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "server".into(),
            serde_json::json!({
                "description": "The server's address (net) or what it saw (net-server).",
                "anyOf": [{"type": "string"}, {"$ref": "#/$defs/ServerStats"}]
            }),
        );
    }
}
