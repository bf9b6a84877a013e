package tools

import "github.com/mark3labs/mcp-go/mcp"

// catalog is every tool, sorted by name. One tool is one file named after it.
func catalog(s *Server) []*tool {
	return []*tool{
		approveTaskRequestTool(),
		assignTaskTool(),
		authenticateTool(s),
		createTaskTool(),
		createTasksBatchTool(),
		delegateToChatSessionTool(),
		dispatchSubtasksTool(),
		endConversationTool(),
		getConversationMessagesTool(),
		getExecutionLogTool(),
		getMyExecutionHistoryTool(),
		getMyProfileTool(),
		getMyTaskTool(),
		getMyTasksTool(),
		getNextActionTool(),
		getNotificationsTool(),
		getPendingMessagesTool(),
		getSessionGuideTool(),
		getSubordinateProfileTool(),
		getTaskTool(),
		getTaskConversationsTool(),
		helpTool(s),
		listSubordinatesTool(),
		listTasksTool(),
		logoutTool(s),
		notifyTaskSessionTool(),
		rejectTaskRequestTool(),
		reportCompletedTool(s),
		reportDelegationCompletedTool(),
		requestTaskTool(),
		respondChatTool(),
		selectActionTool(),
		sendMessageTool(),
		splitTaskTool(),
		startConversationTool(),
		startTaskFromChatTool(),
		updateTaskDependenciesTool(),
		updateTaskFromChatTool(),
		updateTaskStatusTool(),
	}
}

// sessionParam is the session_token parameter every authenticated tool takes.
func sessionParam() mcp.ToolOption {
	return mcp.WithString("session_token",
		mcp.Description("From authenticate; optional on the same connection"))
}

func readOnly() []mcp.ToolOption {
	return []mcp.ToolOption{mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)}
}

func writes() []mcp.ToolOption {
	return []mcp.ToolOption{mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)}
}

func opts(base []mcp.ToolOption, more ...mcp.ToolOption) []mcp.ToolOption {
	return append(append([]mcp.ToolOption{}, base...), more...)
}
