//! Serde helpers shared by the documents' types (plan, results).

use serde::{Deserialize, Deserializer};

/// A present JSON field, `null` included (`Some(None)`); an absent one stays `None` by `default`.
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}
