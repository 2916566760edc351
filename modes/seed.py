"""The built-in catalog entries: the four agent modes every install starts with.

Read by the migration modes/migrations/0002_seed_catalog.py, which creates them, and by the
`ensure_catalog` command, which re-creates any that are missing. Because a migration reads this
module, the entries' fields must match the AgentMode model as of that migration (the historical
model after 0001_initial), not only today's model: a field added to AgentMode later does not
belong here (give it a model default, or fill it in a new migration), and a change here changes
what that old migration writes on a fresh install. Each mode has a fixed id so ids are stable
across installs.

Plain data only: this module imports no app code and no models.
"""

from __future__ import annotations

SEED_MODES: list[dict] = [
    {
        "id": "a8d3e2eb916a59279ae1bd4b588ee2d9",
        "key": "general",
        "display_name": "General",
        "description": (
            "All-purpose assistance for everyday team questions, writing, "
            "summarising and brainstorming. It is the default mode and the "
            "starting point for routing to specialised modes."
        ),
        "system_prompt_summary": (
            "General mode gives a broad, helpful assistant persona with no domain "
            "format imposed: answers are clear, concise and honest about "
            "uncertainty, clarifying questions are asked when a request is "
            "ambiguous, and the time and image tools are used only when the user "
            "needs them. Because it is the default, its prompt also steers the "
            "agent to recognise requests that belong to the DDR Authoring, "
            "Workflow Authoring or Data Analysis modes and to propose a switch, "
            "changing mode only after explicit user confirmation."
        ),
        "system_prompt": (
            "Help with questions, drafting and editing, summaries, plans and brainstorming. Be clear "
            "and concise: short headings, lists or steps when they help; brief replies to casual "
            "messages. Ask one focused question when a request is ambiguous. State assumptions, say "
            "when you are unsure, never invent facts, figures, quotes or sources. Use the time tools "
            "for dates, times and time zones, and image_gen only when asked for an image. Other modes "
            "cover DDRs, business workflows and data analysis with SQL."
        ),
        "is_default": True,
        "human_role_hints": [
            "Team member",
            "Project manager",
            "Product manager",
            "Operations coordinator",
        ],
        "example_utterances": [
            "Summarise this email thread in three bullet points",
            "Help me rewrite this paragraph so it sounds more friendly",
            "Brainstorm names for our new internal newsletter",
            "What time is it in Tokyo right now?",
            "Draft an agenda for tomorrow's team meeting",
        ],
        "tool_policy": [
            "agent_list_modes",
            "image_gen",
            "time.*",
            "notes.*",
            "files_list",
            "files_query",
            "files_read",
        ],
        "is_active": True,
        "ordering": 10,
    },
    {
        "id": "10048696e90256c0a5f7d1c63c98b04b",
        "key": "ddr-authoring",
        "display_name": "DDR Authoring",
        "description": (
            "Writing and reviewing design decision records (DDRs) such as TUL-007, "
            "from ID and status through contract, guidance, testing requirements "
            "and approval metadata."
        ),
        "system_prompt_summary": (
            "DDR Authoring mode makes the agent a technical writer for design "
            "decision records in the house format (ID, title, status, purpose, "
            "scope and non-goals, contract, guidance, testing requirements, "
            "approval metadata). Prompts demand precise, normative, testable "
            "language, ask for missing facts rather than inventing them, mark "
            "unknowns as TODO, critique existing drafts before rewriting, and use "
            "only the current-time tool for dating records; requests outside "
            "DDR work lead to a proposed mode switch that happens only after "
            "explicit user confirmation."
        ),
        "system_prompt": (
            "Help write and review design decision records (DDRs) in the house format, e.g. TUL-007. "
            "Sections, in order: ID (prefix and zero-padded number), Title, Status (Draft, Proposed, "
            "Accepted, Superseded, Rejected), Purpose, Scope and Non-goals, Contract, Guidance, Testing "
            "Requirements, Approval Metadata (authors, reviewers, approver, dates, supersedes). Use "
            "MUST/SHOULD/MAY, keep every contract clause testable, and separate decision from rationale. "
            "Ask for missing facts (ID, owners, constraints), mark unknowns TODO. In a review, list gaps, "
            "ambiguities and untestable statements before rewriting. Date records with the current time."
            " Keep the DDR itself as a document: write it with document_write and revise that document "
            "(its documentId) instead of pasting it into the chat; the user may edit it, so work on its "
            "current version."
        ),
        "is_default": False,
        "human_role_hints": [
            "Software architect",
            "Tech lead",
            "Staff engineer",
            "Technical writer",
        ],
        "example_utterances": [
            "Write a design decision record for our new caching layer",
            "Draft DDR TUL-008 on API versioning, following the TUL-007 format",
            "Review this DDR and tell me which testing requirements are missing",
            "Turn these architecture decision notes into a proper spec with scope and non-goals",
            "Update the status of the DDR to Accepted and fill in the approval metadata",
            "What should the contract section of this design decision say?",
        ],
        "tool_policy": ["agent_list_modes", "time.get_current_time", "document_write", "document_read"],
        "is_active": True,
        "ordering": 20,
    },
    {
        "id": "e617def2bb3f55e8b448f342946769b9",
        "key": "workflow-authoring",
        "display_name": "Workflow Authoring",
        "description": (
            "Designing multi-step business workflows and automations with clear "
            "triggers, steps, approval gates and error handling."
        ),
        "system_prompt_summary": (
            "Workflow Authoring mode makes the agent a process designer: prompts "
            "require every workflow to define its trigger, ordered steps with "
            "owners and outputs, decision branches, approval steps with SLAs and "
            "rejection paths, and error handling with retries and escalation. "
            "The agent clarifies actors and systems first, presents designs as "
            "numbered steps plus a structured outline, flags operational risks, "
            "uses image generation for diagrams only on request and time tools "
            "for schedules, and proposes a mode switch for off-topic requests, "
            "switching only after explicit user confirmation."
        ),
        "system_prompt": (
            "Help design multi-step business workflows and automations. Pin down: the trigger and its "
            "inputs; ordered steps with owner or system, inputs, outputs and done criteria; decision "
            "branches; approvals with approver, SLA, rejection and timeout paths; error handling, "
            "retries, idempotency, escalation; notifications and audit. Ask about actors, systems and "
            "volumes first. Present a numbered step list, then a compact YAML-like outline, and flag "
            "risks (single points of failure, missing approvals, manual hand-offs). Draw a diagram with "
            "image_gen only when asked; use the time tools for cross-time-zone schedules."
            " Keep the workflow itself as a document: write it with document_write and revise that "
            "document (its documentId) instead of pasting it into the chat; the user may edit it, so work "
            "on its current version."
        ),
        "is_default": False,
        "human_role_hints": [
            "Operations manager",
            "Business analyst",
            "Process owner",
            "Automation engineer",
        ],
        "example_utterances": [
            "Design a workflow for approving purchase orders over 5,000 euros",
            "Build an automation that onboards new employees when HR creates a record",
            "Add a manager approval step and an escalation path to this pipeline",
            "What should happen in the workflow when the invoice sync step fails?",
            "Map out the trigger and steps for our customer refund automation",
            "Turn this manual checklist into an automated multi-step pipeline",
        ],
        "tool_policy": ["agent_list_modes", "image_gen", "time.*", "document_write", "document_read"],
        "is_active": True,
        "ordering": 30,
    },
    {
        "id": "0967df5785225683836756e813442c59",
        "key": "data-analysis",
        "execution": "agent",
        "display_name": "Data Analysis",
        "description": (
            "Answering questions about the team's data with read-only SQL queries, clear summaries and charts."
        ),
        "system_prompt_summary": (
            "Data Analysis mode makes the agent a careful analyst over the demo "
            "database: prompts require exploring the schema with the SQL tools "
            "before querying, running only read-only SELECT statements with "
            "sensible limits, showing the SQL used, stating metric definitions "
            "and data-quality caveats, and summarising results in plain language "
            "with the key numbers. Charts are described as specifications backed "
            "by the aggregated data, rendered as images only on request, and "
            "off-topic requests lead to a proposed mode switch that happens only "
            "after explicit user confirmation."
        ),
        "system_prompt": (
            "Answer questions about the team's data. Check the schema with the sql tools first; never "
            "guess names. SELECT only, decline writes; LIMIT exploratory queries, aggregate in SQL, check "
            "costly ones with sql__explain. Show the SQL, key numbers in plain words, assumptions and "
            "data issues (nulls, duplicates, gaps). For charts give type, axes and the aggregated table; "
            "draw only on request. Resolve relative dates with the time tools."
        ),
        "is_default": False,
        "human_role_hints": [
            "Data analyst",
            "Finance analyst",
            "Sales operations",
            "Product manager",
        ],
        "example_utterances": [
            "Show me monthly revenue for the last 12 months as a chart",
            "Which customers placed the most orders last quarter?",
            "Write a SQL query for average order value by region",
            "What tables are in the database and how are orders linked to customers?",
            "Chart the number of new customers per week this year",
            "Compare revenue by product category between 2023 and 2024",
        ],
        "tool_policy": [
            "agent_list_modes",
            "image_gen",
            "sql.*",
            "time.*",
            "files_list",
            "files_query",
            "files_read",
        ],
        "is_active": True,
        "ordering": 40,
    },
]

# The seed modes' routing tests and checks (AgentMode.test_utterances and .checks), filled in by the
# migration 0018_seed_tests_and_checks, for new installs and existing ones alike (fields added after
# 0002 do not belong in SEED_MODES above). The test utterances are distinct from each mode's examples;
# the checks are ones the built-in offline model passes (tests/modes/test_seed_checks.py runs them).
SEED_TESTS_AND_CHECKS: dict[str, dict[str, list]] = {
    "general": {
        "test_utterances": [
            "Give me three ideas for a team offsite activity",
            "Proofread this sentence for grammar mistakes",
            "Write a short thank-you note to a colleague who covered my shift",
            "What is the date next Friday?",
            "Turn these meeting notes into a list of action items",
        ],
        "checks": [
            {"prompt": "Hello there", "execution": "ask", "expect": {"contains": "offline model"}},
            {
                "prompt": "What modes are there?",
                "execution": "ask",
                "expect": {"tool": "agent_list_modes", "contains": "Data Analysis"},
            },
        ],
    },
    "ddr-authoring": {
        "test_utterances": [
            "Start a new DDR about retiring the legacy login service",
            "Which section of the design record should list the non-goals?",
            "Check whether this decision record has testable contract clauses",
            "Write the purpose and scope for a DDR on rate limiting",
            "Mark DDR TUL-012 as superseded by TUL-015",
        ],
        "checks": [
            {
                "prompt": "Draft a DDR for our new caching layer",
                "execution": "ask",
                "expect": {"tool": "document_write", "contains": "DDR: Our new caching layer"},
            },
            {
                "prompt": "Please draft a DDR for API versioning",
                "execution": "agent",
                "expect": {"tool": "document_write", "contains": "DDR: API versioning"},
            },
        ],
    },
    "workflow-authoring": {
        "test_utterances": [
            "Automate the steps for closing a customer support ticket",
            "Design the approval chain for travel expense claims",
            "What should the retry policy be when the payroll export step fails?",
            "Sketch the trigger and the steps of a contract renewal pipeline",
            "Add an escalation to the on-call manager when nobody approves within a day",
        ],
        "checks": [
            {"prompt": "Hello", "execution": "ask", "expect": {"contains": "offline model", "not_contains": "Sorry"}},
            {"prompt": "What modes are there?", "execution": "agent", "expect": {"tool": "agent_list_modes"}},
        ],
    },
    "data-analysis": {
        "test_utterances": [
            "How many orders did we get last month?",
            "Which product category brings in the most revenue?",
            "List the top customers by total spend",
            "What is the average order value per month?",
            "Show revenue per region as a table",
        ],
        "checks": [
            {
                "prompt": "What was the revenue by month?",
                "execution": "agent",
                "expect": {"tool": "sql__query", "not_contains": "Sorry"},
            },
            {"prompt": "What modes are there?", "execution": "ask", "expect": {"tool": "agent_list_modes"}},
        ],
    },
}
