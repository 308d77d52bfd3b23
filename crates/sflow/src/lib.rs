//! sFlow v5: samplers, per-worker rings, encoder, agent.
#![forbid(unsafe_code)]
