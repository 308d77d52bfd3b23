//! Control plane: config file, daemon, dpctl.
