/// Every command the window may invoke; build.rs makes an `allow-*` permission of each.
pub const ALL: &[&str] = &[
    "servers_list",
    "server_connect",
    "server_detail",
    "server_add",
    "servers_import",
    "server_resume",
    "tool_call",
    "prompts_list",
    "prompt_validate",
    "prompt_answer",
    "prompt_wait_choice",
    "prompt_dismiss",
    "audit_list",
    "audit_verify",
    "traffic_list",
    "settings_get",
];
