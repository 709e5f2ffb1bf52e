//! Limits of the modelled kernels' network stack, shared by the KVM and Xen models.

/// NET_RX round time limit of the modelled kernels' net_rx_action: 2 jiffies at HZ = 1000.
pub(crate) const NET_RX_ROUND_TIME: rtvirt_model::Nanos = rtvirt_model::Nanos(2_000_000);
