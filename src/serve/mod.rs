//! `lt serve`: the control plane as a service (seed 001, "You run the
//! control plane … Clients are your users' apps"). Sessions arrive over
//! HTTP and run through the same session engine as `lt run`
//! (`control::session`); their logs live in a [`store::ServerStore`].

pub mod store;
