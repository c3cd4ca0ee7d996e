// GENERATED from ext-core/src/contracts.rs — do not edit. Regenerate with
// `UPDATE_CONTRACTS=1 cargo test -p ext-core --test it contracts` (a test fails while it differs).
// A classic script: content scripts load it first (manifest), pages and the worker import it.
(() => {
  const freeze = (value) => {
    if (typeof value === 'object' && value !== null) Object.values(Object.freeze(value)).forEach(freeze);
    return value;
  };
  globalThis.herdrContracts ??= freeze({
    "activity": {
      "key": "herdrContinuityActivityV1",
      "max_entries_per_scope": 200,
      "max_scopes": 30,
      "version": 1
    },
    "caps": {
      "app_mentions": 8,
      "audit_rows": 50,
      "card_buttons": 6,
      "card_label_chars": 64,
      "card_wording_chars": 512,
      "cards": 4,
      "goal_chars": 500,
      "id_chars": 256,
      "journal_text_bytes": 65536,
      "markers": 16,
      "page_message_bytes": 16384,
      "profile_file_bytes": 65536,
      "queue_items": 20,
      "queue_max_age_days": 7,
      "queue_merged_chars": 24000,
      "queue_text_chars": 25000,
      "rate_report_gap_ms": 10000,
      "runtime_list_items": 256,
      "selector_chars": 256,
      "structure_elements": 200,
      "structure_keys": 16,
      "tail_lines": 40,
      "turn_assistant_chars": 12000,
      "turn_user_chars": 6000
    },
    "companion_calls": {
      "failures": [
        "not_allowed",
        "bad_request",
        "too_many",
        "not_connected",
        "timed_out",
        "companion"
      ],
      "methods": {
        "herdr_agents": "herdr.agents",
        "herdr_pane_read": "herdr.pane_read",
        "herdr_panes": "herdr.panes",
        "herdr_workspaces": "herdr.workspaces",
        "retention_get": "retention.get",
        "retention_set": "retention.set",
        "tools_audit": "tools.audit"
      },
      "per_port": 8,
      "timeout_ms": 10000
    },
    "messages": {
      "page_to_worker": {
        "action": "action",
        "bridge_decide": "bridge_decide",
        "card_result": "card_result",
        "delivery_report": "delivery_report",
        "health_sample": "health_sample",
        "page_diagnostics": "page_diagnostics",
        "page_facts": "page_facts",
        "permission_cards": "permission_cards",
        "queue_add": "queue_add",
        "queue_clear": "queue_clear",
        "rate_limited": "rate_limited",
        "recovery_facts": "recovery_facts",
        "snapshot_result": "snapshot_result",
        "thread_facts": "thread_facts",
        "turn_ended": "turn_ended",
        "user_stop": "user_stop"
      },
      "panel_to_worker": {
        "action": "action",
        "bind": "bind",
        "companion_call": "companion_call",
        "companion_watch": "companion_watch",
        "panel_hello": "panel_hello",
        "panel_refresh": "panel_refresh",
        "queue_aside_remove": "queue_aside_remove",
        "unbind": "unbind"
      },
      "runtime_to_worker": {
        "profile_get": "profile_get",
        "profile_import": "profile_import",
        "profile_reset": "profile_reset",
        "trusted_type": "trusted_type"
      },
      "worker_to_page": {
        "card_allow": "card_allow",
        "clear_composer": "clear_composer",
        "deliver": "deliver",
        "delivery_seen": "delivery_seen",
        "hud": "hud",
        "insert": "insert",
        "notice": "notice",
        "profile": "profile",
        "queue_accepted": "queue_accepted",
        "recovery_reload": "recovery_reload",
        "recovery_retry": "recovery_retry",
        "round_trip_result": "round_trip_result",
        "snapshot_probe": "snapshot_probe",
        "start_problem": "start_problem"
      },
      "worker_to_panel": {
        "companion_answer": "companion_answer",
        "companion_event": "companion_event",
        "companion_state": "companion_state",
        "diagnostics": "diagnostics",
        "hud": "hud",
        "panel": "panel",
        "queue_aside": "queue_aside",
        "round_trip_result": "round_trip_result",
        "start_problem": "start_problem"
      },
      "worker_to_tab": {
        "queue_request": "queue_request"
      }
    },
    "ports": {
      "page": "page",
      "panel": "panel"
    },
    "profiles": {
      "sites": [
        "chatgpt",
        "zai",
        "deepseek"
      ],
      "sources": [
        "builtin",
        "options",
        "companion"
      ]
    },
    "protocol": {
      "host": "dev.herdr.continuity",
      "version": 2
    },
    "retention": {
      "limits": [
        "journal_turns",
        "work_memory_turns",
        "bridge_result_days",
        "inbox_days"
      ],
      "stores": [
        "journal",
        "work_memory",
        "bridge_results",
        "inbox"
      ]
    },
    "settings": {
      "judge": {
        "default_mode": "manual_only",
        "key": "herdrContinuityJudgeV1",
        "max_continues": {
          "default": 3,
          "max": 10,
          "min": 1
        },
        "modes": [
          "off",
          "manual_only",
          "in_auto"
        ]
      },
      "pinned_key": "herdrContinuityPinnedV1",
      "profile_overrides_key": "herdrContinuityProfileOverridesV1",
      "recovery": {
        "fields": [
          {
            "default": 30,
            "max": 600,
            "min": 10,
            "name": "reply_timeout_sec"
          },
          {
            "default": 30,
            "max": 600,
            "min": 10,
            "name": "assistant_stall_sec"
          },
          {
            "default": 60,
            "max": 1800,
            "min": 10,
            "name": "server_stall_sec"
          },
          {
            "default": 60,
            "max": 3600,
            "min": 10,
            "name": "reload_cooldown_sec"
          },
          {
            "default": 600,
            "max": 100000,
            "min": 60,
            "name": "callbacks_warn_per_min"
          },
          {
            "above": "callbacks_warn_per_min",
            "default": 2400,
            "max": 100000,
            "min": 60,
            "name": "callbacks_high_per_min"
          },
          {
            "default": 1500,
            "max": 60000,
            "min": 100,
            "name": "drift_warn_ms"
          },
          {
            "above": "drift_warn_ms",
            "default": 5000,
            "max": 60000,
            "min": 100,
            "name": "drift_high_ms"
          },
          {
            "default": 1536,
            "max": 16384,
            "min": 128,
            "name": "heap_critical_mib"
          },
          {
            "default": 30,
            "max": 600,
            "min": 10,
            "name": "sustained_sec"
          },
          {
            "default": 30,
            "max": 600,
            "min": 10,
            "name": "quiet_sec"
          }
        ],
        "key": "herdrContinuityRecoveryV1"
      },
      "sync": [
        {
          "default": 60,
          "key": "progressTickSec",
          "kind": "seconds",
          "label": "optionProgressTickSec",
          "max": 3600,
          "min": 5
        },
        {
          "default": 1200,
          "key": "progressFallbackSec",
          "kind": "seconds",
          "label": "optionProgressFallbackSec",
          "max": 86400,
          "min": 60
        },
        {
          "default": false,
          "key": "allowProjectAuto",
          "kind": "flag",
          "label": "optionAllowProjectAuto"
        }
      ],
      "sync_keys": {
        "allow_project_auto": "allowProjectAuto",
        "progress_fallback": "progressFallbackSec",
        "progress_tick": "progressTickSec"
      },
      "trusted_typing_key": "trustedTypingAllowed"
    },
    "start_keys": {
      "local": [
        "continuity",
        "herdrContinuityJudgeV1",
        "herdrContinuityRecoveryV1",
        "herdrContinuityProfileOverridesV1",
        "herdrContinuityStartViewV1"
      ],
      "sync": [
        "allowProjectAuto",
        "progressTickSec",
        "progressFallbackSec"
      ],
      "view": "herdrContinuityStartViewV1"
    }
  });
})();
