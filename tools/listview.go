package tools

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// briefTool is a tool as a process started by aipm run lists it: what a model needs to pick
// the tool and fill in its arguments, no more, because many clients send the whole list
// with every model request. The description is its first sentence; a parameter keeps
// its type, enum and bounds, a required one the first clause of its description unless
// that only repeats its name ("The task"); session_token is left out (one agent per
// connection needs none), and so are the optional paging parameters (a first page is what
// a step reads; help describes them, and they stay accepted). help still gives every tool
// in full.
func briefTool(t mcp.Tool) mcp.Tool {
	if b, ok := listBriefs[t.Name]; ok {
		t.Description = b
	} else {
		t.Description = firstSentence(t.Description)
	}
	t.InputSchema.Properties = briefProps(t.InputSchema.Properties, t.InputSchema.Required)
	t.InputSchema.Required = slices.DeleteFunc(slices.Clone(t.InputSchema.Required), func(r string) bool { return r == "session_token" })
	return t
}

// briefProps keeps every parameter with its type, enum and bounds; only a required one
// keeps (the first clause of) its description: an optional one the model may leave out
// is told by its name, and help has the rest.
func briefProps(props map[string]any, required []string) map[string]any {
	if props == nil {
		return nil
	}
	out := make(map[string]any, len(props))
	for name, v := range props {
		if name == "session_token" || paging[name] && !slices.Contains(required, name) {
			continue
		}
		out[name] = briefSchema(v, slices.Contains(required, name))
	}
	return out
}

func briefSchema(v any, required bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	m = maps.Clone(m)
	if d, ok := m["description"].(string); ok {
		// an enum says what the value may be
		if _, enum := m["enum"]; enum || !required {
			d = ""
		}
		if d = briefParam(d); d == "" {
			delete(m, "description")
		} else {
			m["description"] = d
		}
	}
	if p, ok := m["properties"].(map[string]any); ok {
		req, _ := m["required"].([]string)
		m["properties"] = briefProps(p, req)
	}
	if it, ok := m["items"]; ok {
		m["items"] = briefSchema(it, required)
	}
	return m
}

// paging are the parameters that ask for a further page of a list.
var paging = map[string]bool{"after": true, "limit": true, "subtasks_after": true, "subtasks_limit": true, "cursor": true, "offset": true}

// listBriefs are the listed descriptions of the tools whose first sentence is long.
var listBriefs = map[string]string{
	"authenticate":                "Start your session; with no passkey when aipm run started you.",
	"create_task":                 "Create one sub-task in your task tree.",
	"create_tasks_batch":          "Create sub-tasks at once; dependencies name local_ids.",
	"delegate_to_chat_session":    "Have your chat session talk to an agent for this task.",
	"dispatch_subtasks":           "Assign and start sub-tasks in one call.",
	"assign_task":                 "Assign a sub-task to a worker.",
	"get_conversation_messages":   "Read a conversation of your chat session.",
	"get_execution_log":           "The captured output of one of your runs.",
	"get_my_execution_history":    "Your task-session runs, newest first.",
	"get_next_action":             "What to do next, when a result does not say.",
	"get_notifications":           "Your unread notifications; marks them read.",
	"get_pending_messages":        "Your unread messages and the delegations handed to you.",
	"get_task":                    "One task, a page of its sub-tasks, their counts and recent history.",
	"get_task_conversations":      "Conversations and delegations of your task.",
	"help":                        "List your tools, or describe one in full.",
	"list_tasks":                  "Tasks of the project, filtered.",
	"notify_task_session":         "Tell your task session to read a chat.",
	"reject_task_request":         "Reject a task request that waits for approval.",
	"approve_task_request":        "Approve a task request that waits for approval.",
	"report_completed":            "Finish your session's task and end the session.",
	"report_delegation_completed": "Report the outcome of a delegation from your task session.",
	"request_task":                "Ask for a new task for yourself.",
	"respond_chat":                "Reply to the oldest unanswered message.",
	"select_action":               "Pick an option get_next_action offered.",
	"send_message":                "Send a message; between AI agents inside a conversation.",
	"split_task":                  "Replace a pending task by two or more sibling tasks.",
	"start_conversation":          "Ask another AI agent for a conversation.",
	"start_task_from_chat":        "Start a task because a superior asked in chat.",
	"update_task_from_chat":       "Change a task because a superior asked in chat.",
	"update_task_status":          "Set the status of a task in your task tree.",
	"update_task_dependencies":    "Add or drop dependencies.",
}

// firstSentence is s up to its first full stop followed by a space.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// restatement is a parameter description that says no more than the parameter's name
// and type.
var restatement = regexp.MustCompile(`^(The|A|An|Your) [\w -]+$|^At most this many$|^Only .* with this status$`)

// briefParam is the first clause of a parameter description, "" when that only restates
// the name.
func briefParam(d string) string {
	for _, sep := range []string{" (", "; ", ". "} {
		if i := strings.Index(d, sep); i > 0 {
			d = d[:i]
		}
	}
	if restatement.MatchString(d) {
		return ""
	}
	return d
}
