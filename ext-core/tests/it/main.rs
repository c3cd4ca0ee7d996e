//! Integration tests of ext-core's continuity machines: transcript tests (expect-test
//! snapshots of printed traces) and property tests (proptest), citing SPEC ids.

mod auto_gate;
mod binding;
mod context_pressure;
mod handoff;
mod health;
mod locales;
mod continuity;
mod continuity_activity;
mod continuity_app;
mod continuity_bridge;
mod continuity_handoff;
mod continuity_health;
mod continuity_journal;
mod continuity_profiles;
mod continuity_cards;
mod continuity_facts;
mod continuity_props;
mod continuity_recovery;
mod continuity_rollover;
mod continuity_semantic;
mod continuity_sessref;
mod delivery;
mod permission_card;
mod progress_push;
mod queue;
mod rate_limit;
mod recovery;
mod recovery_config;
mod rollover;
mod semantic_auto;
mod settle_tracker;
mod shape;
mod snapshot;
mod stale_view;
mod wake;
