package msg

// texts are the catalog, by key. The English is what agents have always read (the
// scenarios match it byte for byte); the Japanese is the seeds' own words where they give
// them, marked "seed NNN".
var texts = map[string]text{
	// The response envelope (seed 004).
	"server.instructions": {
		"aipm coordinates AI agents and their human owner in this repository. Call authenticate with your agent_id and passkey first, then follow the instruction of every response.",
		"aipm はこのリポジトリで AI エージェントと人間のオーナーの作業を調整します。最初に agent_id と passkey で authenticate を呼び出し、その後はすべての応答の instruction に従ってください。"},
	"notification.none": {"no notifications", "通知はありません"}, // seed 004
	"notification.unread": { // seed 004: the Japanese names no count
		"IMPORTANT: you have %d unread notification(s). Call get_notifications and follow them.",
		"【重要】通知があります。get_notifications を呼び出して確認してください。"},
	"interrupt.notice": { // seed 004
		"You have been interrupted.\n\n1. Call get_notifications to read the details.\n2. Follow their instructions.",
		"通知があります。\n\n1. get_notifications() を呼び出して詳細を確認してください\n2. 通知の指示に従ってください"},

	// authenticate (tools/authenticate.go).
	"auth.chat_session": {
		"You are in a chat session: you talk, real work happens in task sessions. Call get_next_action and follow its instruction, again after every step. Call logout before you exit.",
		"チャットセッションです。ここでは会話のみを行い、実際の作業はタスクセッションで行います。get_next_action を呼び出してその指示に従い、各ステップの後に再び呼び出してください。終了する前に logout を呼び出してください。"},
	"auth.task_session": {
		"You are in a task session for task %s. Follow next_action below: it is what get_next_action answers now. After each step, follow the next_action its result carries; call get_next_action only when a result carries none or says to. Work under the working directory using absolute paths and never edit .ai-pm/ by hand.",
		"タスク %s のタスクセッションです。下記の next_action に従ってください（現在の get_next_action の応答です）。各ステップの後は、その結果に含まれる next_action に従ってください。get_next_action を呼び出すのは、結果に next_action がないときか、呼び出すよう指示されたときだけです。作業ディレクトリ配下で絶対パスを使って作業し、.ai-pm/ を直接編集しないでください。"},
	"auth.task_session.ask": {
		"You are in a task session for task %s. Call get_next_action and follow its instruction; after each step, follow the next_action its result carries, and call get_next_action only when a result carries none or says to. Work under the working directory using absolute paths and never edit .ai-pm/ by hand.",
		"タスク %s のタスクセッションです。get_next_action を呼び出してその指示に従ってください。各ステップの後は、その結果に含まれる next_action に従い、get_next_action を呼び出すのは結果に next_action がないときか、呼び出すよう指示されたときだけにしてください。作業ディレクトリ配下で絶対パスを使って作業し、.ai-pm/ を直接編集しないでください。"},
	"auth.failed": {
		"Authentication did not start a session. Terminate the process now.",
		"認証でセッションは開始されませんでした。直ちにプロセスを終了してください。"},

	// Project pause and resume notifications (filestore/project.go).
	"project.paused.message": {"Project %q was paused by %s.", "プロジェクト %[1]q が %[2]s によって一時停止されました。"},
	"project.paused.instruction": {
		"The project is paused: stop working now and start nothing new. Leave your task as it is (do not report it completed or blocked; it stays in progress) and call logout. Work continues when the project is resumed.",
		"プロジェクトは一時停止中です。直ちに作業を中断し、新しい作業を始めないでください。タスクはそのままにして（report_completed は呼ばず、in_progress のまま）logout を呼び出してください。再開後に作業を続けます。"},
	"project.resumed.message": {"Project %q was resumed by %s.", "プロジェクト %[1]q が %[2]s によって再開されました。"},
	"project.resumed.instruction": {
		"The project is active again: carry on, starting with get_next_action.",
		"プロジェクトが再開されました。get_next_action から作業を続けてください。"},

	// The prompt aipm run starts an agent CLI with (cmd/aipm/internal/coordinator/agentcmd.go).
	"prompt.identity": {
		"You are agent %s (%s) of the aipm project at %s.",
		"あなたは aipm プロジェクト（%[3]s）のエージェント %[1]s（%[2]s）です。"},
	"prompt.role": {" Your role: %s.", "役割: %s。"},
	"prompt.authenticate": {
		" Call the aipm MCP server's authenticate tool with agent_id %q and no passkey (this process was started for a %s session%s).",
		"aipm MCP サーバーの authenticate を agent_id %[1]q で、passkey なしで呼び出してください（このプロセスは %[2]s セッション用に起動されました%[3]s）。"},
	"prompt.on_task": {" on task %s", "。対象タスク: %s"},
	"prompt.loop": {
		" Then follow the answers: do exactly what each instruction says, and call get_next_action only when an answer gives no next step, until you are told to exit. Work in %s using absolute paths; never edit .ai-pm/ by hand.",
		"その後は各応答に従ってください。指示どおりに作業し、応答に次のステップがないときだけ get_next_action を呼び出してください。exit を指示されたら終了してください。作業は %s で絶対パスを使って行い、.ai-pm/ を直接編集しないでください。"},

	// get_next_action in a task session (tools/next_task.go).
	"next.get_task": {
		"Call get_my_task to read your task and open its execution record; its result's next_action says what comes next. Do not start from the description alone.",
		"get_my_task を呼び出してタスクを読み、実行記録を開始してください。その結果の next_action が次にすることを示します。説明文だけを頼りに作業を始めないでください。"},
	"next.task_blocked": {
		"Your task %s was blocked by %s (%s). Stop working on it now. Call report_completed(result=\"blocked\", summary=\"<what you did so far>\"); your session then ends.",
		"あなたのタスク %[1]s は %[2]s によってブロックされました（%[3]s）。直ちに作業を中止してください。report_completed(result=\"blocked\", summary=\"<これまでに行ったこと>\") を呼び出してください。それでセッションは終了します。"},
	"next.task_cancelled": {
		"Your task %s was cancelled by %s. Stop working on it now: call logout and exit. Change nothing more; the task tools refuse this session now.",
		"あなたのタスク %[1]s は %[2]s によってキャンセルされました。直ちに作業を中止し、logout を呼び出して終了してください。これ以上何も変更しないでください（タスクを変更するツールはこのセッションを拒否します）。"},
	"next.task_reassigned": {
		"Your task %s is now assigned to %s: it is no longer yours. Stop working on it now: call logout and exit. Change nothing more; the task tools refuse this session now.",
		"タスク %[1]s は %[2]s に割り当て直されたため、もうあなたのタスクではありません。直ちに作業を中止し、logout を呼び出して終了してください。これ以上何も変更しないでください（タスクを変更するツールはこのセッションを拒否します）。"},
	"next.task_done": {
		"Your task %s is already done (set by %s). Call report_completed(result=\"success\", summary=\"<what you did>\"); your session then ends.",
		"あなたのタスク %[1]s はすでに完了になっています（%[2]s が設定）。report_completed(result=\"success\", summary=\"<行ったこと>\") を呼び出してください。それでセッションは終了します。"},
	"next.task_not_in_progress": {
		"Your task %s was moved back to %s by %s: it is not to be worked on now. Call logout and exit; you will be started again when it is resumed.",
		"あなたのタスク %[1]s は %[3]s によって %[2]s に戻されました。今は作業しないでください。logout を呼び出して終了してください。再開されると改めて起動されます。"},
	"next.no_reason":        {"no reason given", "理由の記載なし"},
	"next.request_rejected": {"request rejected: %s", "依頼は却下されました: %s"},
	"next.start_from_backlog": {
		"update_task_status(task_id=%q, status=\"todo\"), then %s",
		"update_task_status(task_id=%[1]q, status=\"todo\") の後に %[2]s"},
	"next.dep_missing":       {"%s (missing)", "%s（存在しません）"},
	"next.waiting.approval":  {"approval", "承認"},
	"next.waiting.working":   {"%s (working on it)", "%s（作業中）"},
	"next.waiting.to_start":  {"%s to start it", "%s による開始"},
	"next.waiting.assignee":  {"an assignee", "担当者"},
	"next.worker.delegation": {"Your chat session is still carrying out what you delegated. Call get_next_action again right away: it waits until the delegation is reported and then shows the result. Do not sleep.", "委譲した件はまだチャットセッションが進めています。すぐに get_next_action をもう一度呼び出してください。委譲の報告があるまで待ち、その結果を示します。sleep はしないでください。"},
	"next.worker.create_subtasks": {
		"Judge the task's size. If it takes several distinct steps, split it into 2–5 sub-tasks with create_tasks_batch(parent_task_id=%q, tasks=[...]) — give dependencies by local_id where one step needs another — and follow the next_action of its result. If it is simple, do it yourself now, in the working directory, and call report_completed(result=\"success\", summary=\"<what you did>\") (or result=\"blocked\", summary=\"<why>\" if you cannot finish it).",
		"タスクの規模を判断してください。いくつかの異なる段階が必要なら、create_tasks_batch(parent_task_id=%[1]q, tasks=[...]) で 2〜5 個のサブタスクに分割し（ある段階が別の段階の結果を必要とする場合は local_id で依存関係を指定）、その結果の next_action に従ってください。単純なタスクなら今すぐ自分で作業ディレクトリ内で実行し、report_completed(result=\"success\", summary=\"<行ったこと>\") を呼び出してください（完了できない場合は result=\"blocked\", summary=\"<理由>\"）。"},
	"next.worker.work": {
		"Do task %s yourself now, in the working directory. When it is finished, call report_completed(result=\"success\", summary=\"<what you did>\"). If you cannot finish it, call report_completed(result=\"blocked\", summary=\"<why>\"). If it needs another agent's answer, ask through your chat session: delegate_to_chat_session(target_agent_id=..., purpose=..., timeout_seconds=50) answers with the result.",
		"タスク %[1]s を今すぐ自分で、作業ディレクトリ内で実行してください。完了したら report_completed(result=\"success\", summary=\"<行ったこと>\") を呼び出してください。完了できない場合は report_completed(result=\"blocked\", summary=\"<理由>\") を呼び出してください。他のエージェントの回答が必要なら、チャットセッションを通じて尋ねてください。delegate_to_chat_session(target_agent_id=..., purpose=..., timeout_seconds=50) が結果を返します。"},
	"next.worker.report_completion": {
		"Every sub-task of %s is finished. Check the result, then call report_completed(result=\"success\", summary=\"<what was done>\").",
		"%[1]s のサブタスクはすべて終了しました。結果を確認してから report_completed(result=\"success\", summary=\"<行われたこと>\") を呼び出してください。"},
	"next.worker.execute_subtask": {
		"Do sub-task %s (%q) now. When it is finished, call update_task_status(task_id=%q, status=\"done\"): its result says what comes next. If you cannot finish it, call update_task_status(task_id=%q, status=\"blocked\", reason=\"<why>\"). If it needs another agent's answer, ask through your chat session: delegate_to_chat_session(target_agent_id=..., purpose=..., timeout_seconds=50) answers with the result.",
		"サブタスク %[1]s（%[2]q）を今すぐ実行してください。完了したら update_task_status(task_id=%[3]q, status=\"done\") を呼び出してください。その結果が次の段階を示します。完了できない場合は update_task_status(task_id=%[4]q, status=\"blocked\", reason=\"<理由>\") を呼び出してください。他のエージェントの回答が必要なら、チャットセッションを通じて尋ねてください。delegate_to_chat_session(target_agent_id=..., purpose=..., timeout_seconds=50) が結果を返します。"},
	"next.worker.execute_subtask.start_next": {
		"Do sub-task %s (%q) now. When it is finished, call update_task_status(task_id=%q, status=\"done\", start_next=true): that also starts your next sub-task once it is ready, and its result says what comes next. If you cannot finish it, call update_task_status(task_id=%q, status=\"blocked\", reason=\"<why>\"). If it needs another agent's answer, ask through your chat session: delegate_to_chat_session(target_agent_id=..., purpose=..., timeout_seconds=50) answers with the result.",
		"サブタスク %[1]s（%[2]q）を今すぐ実行してください。完了したら update_task_status(task_id=%[3]q, status=\"done\", start_next=true) を呼び出してください。準備のできた次のサブタスクも開始され、その結果が次の段階を示します。完了できない場合は update_task_status(task_id=%[4]q, status=\"blocked\", reason=\"<理由>\") を呼び出してください。他のエージェントの回答が必要なら、チャットセッションを通じて尋ねてください。delegate_to_chat_session(target_agent_id=..., purpose=..., timeout_seconds=50) が結果を返します。"},
	"next.worker.start_subtask": {
		"Start sub-task %s (%q): call %s. Its result says how to go on.",
		"サブタスク %[1]s（%[2]q）を開始してください。%[3]s を呼び出してください。その結果が続け方を示します。"},
	"next.worker.blocks": {"Nothing can move until blocked sub-tasks are resolved. ", "ブロックされたサブタスクが解決するまで、何も進められません。"},
	"next.worker.blocks.self": {
		"You blocked %s yourself: if the cause is gone, call update_task_status(task_id=\"<id>\", status=\"in_progress\") for it and continue; ",
		"%[1]s はあなた自身がブロックしました。原因が解消していれば、それについて update_task_status(task_id=\"<id>\", status=\"in_progress\") を呼び出して続けてください。"},
	"next.worker.blocks.others": {
		"%s were blocked by someone else (or their request was rejected): you may not unblock them. ",
		"%[1]s は他者によってブロックされた（または依頼が却下された）ため、あなたがブロックを解除することはできません。"},
	"next.worker.blocks.give_up": {
		"If you cannot resolve the blocks, call report_completed(result=\"blocked\", summary=\"<what blocks you>\") and leave it to your manager.",
		"ブロックを解決できない場合は report_completed(result=\"blocked\", summary=\"<妨げになっていること>\") を呼び出し、マネージャーに任せてください。"},
	"next.worker.deadlock": {
		"None of your remaining sub-tasks can start: they wait for dependencies that nobody is working on (a loop, or a cancelled or blocked dependency). " +
			"Cancel a stuck sub-task with update_task_status(task_id=\"<id>\", status=\"cancelled\") and create a replacement without the bad dependency (create_task), " +
			"or call report_completed(result=\"blocked\", summary=\"<which dependencies are stuck>\").",
		"残りのサブタスクはどれも開始できません。誰も作業していない依存先（循環、またはキャンセル・ブロックされた依存先）を待っています。" +
			"行き詰まったサブタスクを update_task_status(task_id=\"<id>\", status=\"cancelled\") でキャンセルして、問題の依存関係のない代わりのタスクを作成する（create_task）か、" +
			"report_completed(result=\"blocked\", summary=\"<行き詰まっている依存関係>\") を呼び出してください。"},
	"next.worker.wait": {
		"Your next sub-tasks wait for work of others (a dependency in progress, or a request awaiting approval). Call get_next_action again right away: it waits until something changes. Do not sleep.",
		"次のサブタスクは他者の作業（進行中の依存先、または承認待ちの依頼）を待っています。すぐに get_next_action をもう一度呼び出してください。何か変化があるまで待ちます。sleep はしないでください。"},
	"next.manager.create_subtasks": {
		"You manage this task; your workers do the work. Split it into sub-tasks with create_tasks_batch(parent_task_id=%q, tasks=[...]) — one per piece a worker can own, with dependencies by local_id where one needs another's result. Its result's next_action says what comes next.",
		"あなたはこのタスクを管理し、作業は部下のワーカーが行います。create_tasks_batch(parent_task_id=%[1]q, tasks=[...]) でサブタスクに分割してください（ワーカー1人が担当できる単位ごとに1つ、別のサブタスクの結果が必要なものは local_id で依存関係を指定）。その結果の next_action が次にすることを示します。"},
	"next.manager.wait": {
		"Your workers are on it and nothing has changed yet. Call get_next_action again right away: it waits until a sub-task changes and then tells you what happened. Do not sleep or exit.",
		"ワーカーが作業中で、まだ変化はありません。すぐに get_next_action をもう一度呼び出してください。サブタスクに変化があるまで待ち、何が起きたかを伝えます。sleep や終了はしないでください。"},
	"next.manager.wait_for_work": {
		"Your workers are on it and nothing needs you now. Call get_next_action again right away: it waits until something does (a sub-task to dispatch, a block, or the end of the work) and tells you what changed. Do not sleep or exit.",
		"ワーカーが作業中で、今あなたがすべきことはありません。すぐに get_next_action をもう一度呼び出してください。すべきこと（ディスパッチするサブタスク、ブロック、作業の完了）が生じるまで待ち、何が変わったかを伝えます。sleep や終了はしないでください。"},
	"next.manager.report_completion": {
		"Call report_completed(result=\"success\", summary=\"<what your team delivered>\") for %s.",
		"%[1]s について report_completed(result=\"success\", summary=\"<チームが成し遂げたこと>\") を呼び出してください。"},
	"next.manager.completion_check": {
		"Every sub-task is finished. Review the results (completion summaries below; check the deliverables in the working directory), " +
			"then call report_completed(result=\"success\", summary=\"<what your team delivered>\") for %s. Only if work is missing, call select_action(action=\"adjust\") instead.",
		"すべてのサブタスクが終了しました。結果を確認し（完了サマリーは下記、成果物は作業ディレクトリで確認）、" +
			"%[1]s について report_completed(result=\"success\", summary=\"<チームが成し遂げたこと>\") を呼び出してください。作業が足りない場合に限り、代わりに select_action(action=\"adjust\") を呼び出してください。"},
	"next.manager.blocks": {"Only blocked sub-tasks, and sub-tasks that wait for them, are left: %s. ", "残っているのはブロックされたサブタスクと、それを待つサブタスクだけです: %[1]s。"},
	"next.manager.wait_unblock": {
		"Only sub-tasks someone else holds are left: %s. Their blocks are a human's or another agent's to lift: do not unblock them, and do not report your task blocked. " +
			"Call get_next_action again right away: it waits until one of them changes and then tells you what to do. Do not sleep or exit.",
		"残っているのは他者が止めているサブタスクだけです: %[1]s。ブロックを解除するのは人間または他のエージェントです。解除せず、タスクを blocked として報告もしないでください。" +
			"すぐに get_next_action をもう一度呼び出してください。どれかに変化があるまで待ち、次にすべきことを伝えます。sleep や終了はしないでください。"},
	"next.dead_dependency": {"%s (%s) depends on %s, which is %s", "%[1]s（%[2]s）は %[3]s に依存していますが、%[3]s は %[4]s です"},
	"next.manager.dead_dependencies": {
		"Some sub-tasks wait for a task that will never be done: %s. Ways out, for each: drop the dependency if the sub-task can go on without it, " +
			"e.g. update_task_dependencies(task_id=%q, remove=[%q]); cancel the sub-task if it is no longer needed (update_task_status cancelled); " +
			"or create a replacement (create_task) and make the sub-task depend on it instead (update_task_dependencies with add and remove). Then call get_next_action.",
		"完了することのないタスクを待っているサブタスクがあります: %[1]s。それぞれ次のいずれかで解決してください: サブタスクがそれなしで進められるなら依存関係を外す" +
			"（例: update_task_dependencies(task_id=%[2]q, remove=[%[3]q])）、不要ならサブタスクをキャンセルする（update_task_status で cancelled）、" +
			"または代わりのタスクを作成し（create_task）、サブタスクがそちらに依存するようにする（update_task_dependencies の add と remove）。その後 get_next_action を呼び出してください。"},
	"next.left.blocked":  {"%s (%s) blocked by %s: %s", "%[1]s（%[2]s）は %[3]s がブロック: %[4]s"},
	"next.left.rejected": {"%s (%s) rejected: %s", "%[1]s（%[2]s）は却下: %[3]s"},
	"next.left.waits":    {"%s (%s, %s) waits for %s", "%[1]s（%[2]s、%[3]s）は %[4]s を待っています"},
	"next.left.approval": {"%s (%s, %s) awaits approval", "%[1]s（%[2]s、%[3]s）は承認待ちです"},
	"next.manager.blocks.self": {
		"%s were blocked by you or your workers: read the reasons (get_task); when the cause is resolved, call update_task_status(task_id=\"<id>\", status=\"todo\"), reassign with assign_task if another worker fits better, and dispatch it again. ",
		"%[1]s はあなたかワーカーがブロックしました。理由を読み（get_task）、原因が解消したら update_task_status(task_id=\"<id>\", status=\"todo\") を呼び出し、別のワーカーが適任なら assign_task で割り当て直して、もう一度ディスパッチしてください。"},
	"next.manager.blocks.others": {
		"%s were blocked by a human or another agent (or their request was rejected): do not unblock them; consider other ways — new sub-tasks with create_tasks_batch, or cancelling what is no longer needed. ",
		"%[1]s は人間または他のエージェントによってブロックされた（または依頼が却下された）ため、ブロックを解除しないでください。create_tasks_batch で新しいサブタスクを作る、不要になったものをキャンセルするなど、別の方法を検討してください。"},
	"next.manager.blocks.give_up": {
		"Only if nothing works, call report_completed(result=\"blocked\", summary=\"<what blocks the task and what you tried>\").",
		"どうしても解決できない場合に限り、report_completed(result=\"blocked\", summary=\"<タスクを妨げていることと試したこと>\") を呼び出してください。"},
	"next.manager.no_workers": {
		"No active AI subordinate can take %s. Ask the owner to add one under you (aipm agent add <id> --parent %s), then call report_completed(result=\"blocked\", summary=\"no available workers\").",
		"%[1]s を担当できる有効な AI の部下がいません。オーナーにあなたの配下へ追加するよう依頼し（aipm agent add <id> --parent %[2]s）、その後 report_completed(result=\"blocked\", summary=\"no available workers\") を呼び出してください。"},
	"next.manager.choose": {
		"The sub-tasks and your workers are below. Choose: ",
		"サブタスクとワーカーは下記のとおりです。次のいずれかを選んでください: "},
	"next.manager.choose.sep": {", ", "、"},
	"next.manager.choose.dispatch": {
		"select_action(action=\"dispatch_task\") to assign and start %d sub-task(s)",
		"%[1]d 件のサブタスクを割り当てて開始するなら select_action(action=\"dispatch_task\")"},
	"next.manager.choose.adjust": {"select_action(action=\"adjust\") to change the plan", "計画を変更するなら select_action(action=\"adjust\")"},
	"next.manager.choose.wait": {
		"select_action(action=\"wait\") while %d sub-task(s) run",
		"%[1]d 件のサブタスクの実行中に待つなら select_action(action=\"wait\")"},
	"next.manager.choose.then": {". Then call get_next_action.", "。その後 get_next_action を呼び出してください。"},
	"next.manager.dispatch": {
		"Dispatch: call %s (the call below). It gives each sub-task without an assignee to the least loaded worker; change an assignee_id where another worker's role fits better. " +
			"It assigns them, starts those whose dependencies are done, and starts the others when theirs are; with timeout_seconds it then waits until something needs you, as get_next_action would. Its result says how to go on.",
		"ディスパッチしてください: %s を呼び出します（下記の call）。担当者のいないサブタスクは最も負荷の少ないワーカーに割り当ててあります。役割がより合うワーカーがいれば assignee_id を変更してください。" +
			"割り当てたうえで、依存先が完了しているものを開始し、残りは依存先が完了したときに開始します。timeout_seconds を指定すると、その後 get_next_action と同じように、あなたの対応が必要になるまで待ちます。その結果が続け方を示します。"},
	"next.manager.adjust": {
		"Change the plan with: assign_task (reassign a sub-task that is not running), update_task_status (e.g. cancel what is no longer needed), " +
			"create_tasks_batch (new sub-tasks), split_task (replace a todo or backlog sub-task by smaller ones). Inspect with list_tasks, get_task, list_subordinates, get_subordinate_profile. Then call get_next_action.",
		"次のツールで計画を変更してください: assign_task（実行中でないサブタスクの割り当て直し）、update_task_status（不要になったもののキャンセルなど）、" +
			"create_tasks_batch（新しいサブタスク）、split_task（todo または backlog のサブタスクをより小さなものに置き換え）。状況は list_tasks、get_task、list_subordinates、get_subordinate_profile で確認できます。その後 get_next_action を呼び出してください。"},
	"next.follow":        {"Follow next_action: it is what get_next_action answers now.", "next_action に従ってください（現在の get_next_action の応答です）。"},
	"next.change.new":    {"%s (%s) is new: %s", "%[1]s（%[2]s）が新たに追加されました: %[3]s"},
	"next.change.moved":  {"%s (%s): %s → %s", "%[1]s（%[2]s）: %[3]s → %[4]s"},
	"next.change.by":     {" by %s", "（%s による）"},
	"next.change.reason": {": %s", ": %s"},

	// get_next_action in a chat session (tools/next_chat.go, seed 002).
	"chat.closed": {"The chat was closed. Call logout, then exit.", "チャットは閉じられました。logout を呼び出してから終了してください。"},
	"chat.conversation_request": { // seed 002, then what aipm adds
		"%s wants a conversation (purpose: %s; at most %d messages). It is now active: read the messages with get_pending_messages and answer with respond_chat or send_message. Either side may end it with end_conversation. Then call get_next_action.",
		"%[1]sから会話リクエストがあります。get_pending_messagesでメッセージを確認し、respond_chatで応答してください。（目的: %[2]s、最大 %[3]d メッセージ。会話はすでにアクティブで、send_message でも応答できます。どちらの側も end_conversation で終了できます。）その後 get_next_action を呼び出してください。"},
	"chat.conversation_expired": {
		"%s did not accept your conversation %s in time; it expired. If it served a delegation, report it with report_delegation_completed(status=\"failed\") or try again later. Then call get_next_action.",
		"%[1]s が会話 %[2]s を期限内に承諾しなかったため、会話は期限切れになりました。委譲のための会話だった場合は report_delegation_completed(status=\"failed\") で報告するか、後でもう一度試してください。その後 get_next_action を呼び出してください。"},
	"chat.conversation_expired.delegation": {
		"%s did not accept your conversation %s in time; it expired. It served delegation %s, which is still yours: try once more with start_conversation(target_agent_id=%q, delegation_id=%q, initial_message=...), or give it up with report_delegation_completed(delegation_id=%q, status=\"failed\", result=\"<why>\"). Then call get_next_action.",
		"%[1]s が会話 %[2]s を期限内に承諾しなかったため、会話は期限切れになりました。この会話は委譲 %[3]s のためのもので、委譲はまだあなたが担当しています。start_conversation(target_agent_id=%[4]q, delegation_id=%[5]q, initial_message=...) でもう一度試すか、report_delegation_completed(delegation_id=%[6]q, status=\"failed\", result=\"<理由>\") で断念を報告してください。その後 get_next_action を呼び出してください。"},
	"chat.conversation_duplicate": {
		"Your conversation %s with %s was ended as a duplicate: a sync of two machines' states found another live conversation between you two, and that one is kept. Nothing said in it is lost. Start yours again (start_conversation) once the other one has ended; a delegation it served stays yours to carry out. Then call get_next_action.",
		"会話 %[1]s（相手: %[2]s）は重複として終了しました。2 台のマシンの状態を同期したところ、同じ二者の間に進行中の別の会話があり、そちらが残されました。発言は失われていません。もう一方の会話が終わったら、改めて start_conversation で始めてください。その会話が担っていた委譲は引き続きあなたが行います。その後 get_next_action を呼び出してください。"},
	"chat.process_delegation": {
		"Your task session asks you to talk to %s: %s. For an exchange, call start_conversation(target_agent_id=%q, purpose=..., initial_message=...) (for an AI agent) and carry it through; for a one-way note, send_message. When done, call report_delegation_completed(delegation_id=%q, result=\"<what came of it>\").",
		"タスクセッションから %[1]s と話すよう依頼されています: %[2]s。やり取りが必要なら（相手が AI エージェントの場合）start_conversation(target_agent_id=%[3]q, purpose=..., initial_message=...) を呼び出して最後まで進めてください。一方的な連絡なら send_message を使ってください。終わったら report_delegation_completed(delegation_id=%[4]q, result=\"<結果>\") を呼び出してください。"},
	"chat.delegation_resumed": {
		"Delegation %s was left unfinished by your previous chat session, which ended: it is yours to finish now. ",
		"委任 %[1]s は前のチャットセッションが終了したため未完了のまま残っています。これからあなたが完了させてください。"},
	"chat.delegation_resumed.conversation": {
		"Its conversation %s has been ended (read it with get_conversation_messages if useful); start a new one. ",
		"その会話 %[1]s は終了させました（必要なら get_conversation_messages で読めます）。新しい会話を始めてください。"},
	"chat.conversation_ended.delegation": {
		" It served delegation %s (now %s).",
		"（この会話は委任 %[1]s のためのものでした。現在 %[2]s。）"},
	"chat.pending_messages": {
		"Call get_pending_messages and answer. A chat session talks; real work happens in task sessions (request_task for work requests, notify_task_session to pass things on).",
		"get_pending_messages を呼び出して応答してください。チャットセッションは会話をするためのもので、実際の作業はタスクセッションで行います（作業の依頼は request_task、タスクセッションへの伝達は notify_task_session）。"},
	"chat.timeout": {
		"No message for %s: call logout and exit. You are started again when a message arrives.",
		"%[1]s の間メッセージがありませんでした。logout を呼び出して終了してください。メッセージが届くと改めて起動されます。"},
	"chat.idle": {
		"Nothing to talk about: no unread message, no open conversation or delegation, and no human holds the chat open. Call logout and exit. You are started again when a message arrives.",
		"話すことはありません（未読メッセージ、進行中の会話・委譲、人間が開いているチャットのいずれもありません）。logout を呼び出して終了してください。メッセージが届くと改めて起動されます。"},
	"chat.wait": {
		"Nothing pending. Call get_next_action again right away: it waits for messages. Do not sleep.",
		"保留中のものはありません。すぐに get_next_action をもう一度呼び出してください。メッセージが届くまで待ちます。sleep はしないでください。"},
	"chat.conversation_ended": { // seed 002, then what aipm adds
		"The conversation %s with %s has ended (%s). Read any unread messages with get_pending_messages, then call get_next_action.",
		"会話が終了しました。get_next_actionで次の指示を確認してください。（会話 %[1]s、相手 %[2]s、理由 %[3]s。未読のメッセージがあれば、先に get_pending_messages で確認してください。）"},

	// Notifications of task changes (tools/changes.go).
	"change.by_hand":          {"a hand edit of .ai-pm/tasks/%s.json", ".ai-pm/tasks/%s.json の手作業での編集"},
	"message.new":             {"New message from %s: %s", "%s から新しいメッセージ: %s"},
	"message.read":            {"Call get_pending_messages to read it, then answer it.", "get_pending_messages で読んでから応答してください。"},
	"change.manager":          {"your manager", "あなたのマネージャー"},
	"change.someone":          {"another agent", "別のエージェント"},
	"change.own_chat":         {"your own chat session at the request of %s", "%s の依頼を受けたあなた自身のチャットセッション"},
	"change.cancelled_reason": {"%s %s (%s) was cancelled by %s: %s", "%[1]s %[2]s（%[3]s）は %[4]s によってキャンセルされました: %[5]s"},
	"change.task":             {"Your task", "あなたのタスク"},
	"change.subtask":          {"Your sub-task", "あなたのサブタスク"},
	"change.reassigned":       {"%s %s (%s) was reassigned to %s by %s.", "%[1]s %[2]s（%[3]s）は %[5]s によって %[4]s に割り当て直されました。"},
	"change.blocked":          {"%s %s (%s) was blocked by %s: %s", "%[1]s %[2]s（%[3]s）は %[4]s によってブロックされました: %[5]s"},
	"change.cancelled":        {"%s %s (%s) was cancelled by %s.", "%[1]s %[2]s（%[3]s）は %[4]s によってキャンセルされました。"},
	"change.status":           {"%s %s (%s) went from %s to %s, changed by %s.", "%[1]s %[2]s（%[3]s）は %[6]s によって %[4]s から %[5]s に変更されました。"},
	"change.edited":           {"%s %s (%s) was edited by %s.", "%[1]s %[2]s（%[3]s）は %[4]s によって編集されました。"},
	"change.handed_blocked":   {"Sub-task %s (%s), assigned to %s, was blocked by %s: %s", "%[3]s に割り当てたサブタスク %[1]s（%[2]s）は %[4]s によってブロックされました: %[5]s"},
	"change.handed_blocked_instruction": {
		"Deal with the block once your current step is done: call get_next_action, which shows the blocked sub-tasks and what you may do about them.",
		"今の作業の区切りでブロックに対処してください。get_next_action を呼び出すと、ブロックされたサブタスクと取れる対応を示します。"},
	"change.go_on":        {"Call get_next_action: it tells you how to go on.", "get_next_action を呼び出してください。どう続けるかを指示します。"},
	"change.reread":       {"Read it again with get_task and take the change into account.", "get_task でもう一度読み、変更を踏まえて作業してください。"},
	"change.stop_blocked": {"Stop working on it now and call get_next_action: while the task stays blocked, it asks you for report_completed(result=\"blocked\", summary=\"<what you did so far>\"); if the task was unblocked meanwhile, it says how to go on.", "直ちに作業を中止し、get_next_action を呼び出してください。タスクがブロックされたままなら report_completed(result=\"blocked\", summary=\"<これまでに行ったこと>\") を求めます。その間にブロックが解除されていれば、どう続けるかを指示します。"},
	"change.stop_logout":  {"Stop working on it now: call logout and exit. Change nothing more (do not call report_completed): the task is no longer yours.", "直ちに作業を中止し、logout を呼び出して終了してください。これ以上何も変更しないでください（report_completed は呼び出さないでください）。このタスクはもうあなたのものではありません。"},
	"change.stop_subtask": {"Stop working on that sub-task now and call get_next_action: it tells you how to go on.", "そのサブタスクの作業を直ちに中止し、get_next_action を呼び出してください。どう続けるかを指示します。"},

	// A chat session's word to its own task session (filestore NotifyTaskSession, seed 000).
	"self_notice.message": {"Your chat session asks you to check the chat.", "チャットセッションからチャット確認の依頼があります。"},
	"self_notice.conversation": { // seed 000, then its 【重要】 paragraph
		"This notification comes from yourself: your own chat session sent it to this task session. " +
			"Call get_conversation_messages(conversation_id: %q) to read the chat, then act on it as needed.",
		"あなたのチャットセッションからの通知です。get_conversation_messages(conversation_id: %[1]q) で内容を確認してください。" +
			"【重要】この通知は、あなた自身が別のセッション（チャットセッション）から送信したものです。必要に応じて対応してください。"},
	"self_notice.plain": {
		"This notification comes from yourself: your own chat session sent it to this task session. Read the message and act on it as needed.",
		"あなたのチャットセッションからの通知です。【重要】この通知は、あなた自身が別のセッション（チャットセッション）から送信したものです。メッセージを確認し、必要に応じて対応してください。"},

	// aipm run asks a process that has been silent too long (filestore AskSilent).
	"silent.message": {
		"aipm run has seen no tool call and no output from you for %s: you seem stuck.",
		"aipm run は %s の間、あなたからのツール呼び出しも出力も確認できていません。停止しているようです。"},
	"silent.instruction": {
		"If you are working, report your progress now (call get_next_action, or any aipm tool); if you are stuck, call get_next_action and follow it. Without a sign of life within %s this process is stopped and the work goes to the next start.",
		"作業中であれば、今すぐ進捗を知らせてください（get_next_action か、いずれかの aipm ツールを呼び出してください）。行き詰まっている場合は get_next_action を呼び出して指示に従ってください。%s 以内に応答がなければ、このプロセスは停止され、作業は次の起動に引き継がれます。"},

	// A delegation ended because its target will not answer (filestore EndTalksWith).
	"talk.agent_inactive": {
		"%s was made inactive and will not answer: the delegation ended without it. Ask someone else, or report the step blocked with this reason.",
		"%[1]s は非アクティブにされたため応答しません。この委譲は相手なしで終了しました。別の相手に頼むか、この理由でステップをブロックとして報告してください。"},
	"talk.agent_cannot_start": {
		"%s cannot be started (%s) and will not answer: the delegation ended without it. Ask someone else, or report the step blocked with this reason.",
		"%[1]s は起動できないため（%[2]s）応答しません。この委譲は相手なしで終了しました。別の相手に頼むか、この理由でステップをブロックとして報告してください。"},

	// Tool results.
	"approve_task_request.done": {
		"Task %s is approved. %s may work on it once it is moved to todo and then in_progress.",
		"タスク %[1]s を承認しました。todo、続いて in_progress に移されると、%[2]s が作業できます。"},
	"update_task_dependencies.done": {
		"Dependencies changed. Call get_next_action.",
		"依存関係を変更しました。get_next_action を呼び出してください。"},
	"assign_task.done": {"Start it with update_task_status in_progress when its dependencies are done.", "依存先が完了したら update_task_status で in_progress にして開始してください。"},
	"create_task.worker": {
		"Created and assigned to you. Create the remaining sub-tasks, then start them in dependency order with update_task_status.",
		"作成し、あなたに割り当てました。残りのサブタスクを作成してから、依存関係の順に update_task_status で開始してください。"},
	"create_task.manager": {
		"Created unassigned. Assign it to a subordinate with assign_task; unassigned tasks never run.",
		"担当者なしで作成しました。assign_task で部下に割り当ててください。担当者のいないタスクは実行されません。"},
	"create_tasks_batch.worker": {
		"Created and assigned to you. Call get_next_action: it starts them in dependency order.",
		"作成し、あなたに割り当てました。get_next_action を呼び出してください。依存関係の順に開始するよう指示します。"},
	"create_tasks_batch.manager": {
		"Created unassigned: unassigned tasks never run. Call get_next_action to dispatch them to your subordinates.",
		"担当者なしで作成しました。担当者のいないタスクは実行されません。get_next_action を呼び出して部下にディスパッチしてください。"},
	"delegate_to_chat_session.message": {"Handed to your chat session; it starts when it is free.", "依頼をチャットセッションに登録しました。次回チャットセッション起動時に処理されます。"}, // seed 003
	"delegate_to_chat_session.done": {
		"Go on with work that does not need the answer. get_next_action tells you to wait while your next step depends on it; get_task_conversations shows the result.",
		"返答を必要としない作業を続けてください。次の段階が返答を必要とする間は、get_next_action が待つよう指示します。結果は get_task_conversations で確認できます。"},
	"delegate_to_chat_session.finished": {"The delegation is %s: result holds your chat session's report.", "委譲は %s になりました。result にチャットセッションの報告があります。"},
	"delegate_to_chat_session.go_on": {
		"Go on with the step that needed it: no get_next_action is needed to learn the result.",
		"その結果を必要としていた段階を続けてください。結果を知るために get_next_action を呼ぶ必要はありません。"},
	"end_conversation.done":       {"Conversation ended; %s will be told. ", "会話終了をリクエストしました。相手に通知されます。（相手: %[1]s）"}, // seed 002
	"end_conversation.delegation": {"If it carried out a delegation, call report_delegation_completed with the result. ", "委譲を実行するための会話だった場合は、report_delegation_completed で結果を報告してください。"},
	"end_conversation.then":       {"Then call get_next_action.", "その後 get_next_action を呼び出してください。"},
	"get_execution_log.whole":     {"This is the whole log.", "これがログの全体です。"},
	"get_execution_log.end":       {"This is the end of the log; nothing follows.", "ログの末尾まで取得しました。続きはありません。"},
	"get_execution_log.truncated": {"The log is truncated. Pass offset (and limit) to read another part.", "ログが切り詰められています。offset を指定して続きを取得できます。"}, // seed 000
	"get_my_execution_history.done": {
		"Call get_execution_log with an execution_id to read its output.",
		"ログ内容を確認するには get_execution_log(execution_id) を呼び出してください。"}, // seed 000
	"get_my_tasks.done":              {"These are the tasks assigned to you.", "上記があなたに割り当てられたタスクです。"}, // seed 000
	"get_my_tasks.none":              {"No task assigned to you matches.", "該当する、あなたに割り当てられたタスクはありません。"},
	"get_conversation_messages.done": {"Read the messages above and act on them as needed.", "上記のメッセージを確認し、必要に応じて対応してください。"}, // seed 000
	"get_my_task.done":               {"Call get_next_action: it tells you how to proceed with this task.", "get_next_action を呼び出してください。このタスクの進め方を指示します。"},
	"get_notifications.none":         {"Nothing to do about notifications.", "通知について対応することはありません。"},
	"get_notifications.some":         {"Follow each notification's instruction in the order listed: interrupts first, then the rest, each the newest first.", "それぞれの通知の instruction に、並んでいる順に従ってください。中断通知（interrupt）が先、その後に残りが、それぞれ新しいものから並んでいます。"},
	"get_pending_messages.some": {
		"Answer each sender with send_message (or respond_chat). A chat session talks and never does task work: " +
			"for a work request use request_task; to pass something to your task session use notify_task_session. Then call get_next_action.",
		"送信者それぞれに send_message（または respond_chat）で応答してください。チャットセッションは会話だけを行い、タスクの作業はしません。" +
			"作業の依頼には request_task を、タスクセッションへの伝達には notify_task_session を使ってください。その後 get_next_action を呼び出してください。"},
	"get_pending_messages.none":   {"No unread messages. Call get_next_action.", "未読のメッセージはありません。get_next_action を呼び出してください。"},
	"get_task_conversations.done": {"Use the results for your task. Read a conversation with get_conversation_messages.", "結果をタスクに活かしてください。会話の内容は get_conversation_messages で読めます。"},
	"get_task_conversations.open": {"Some delegations are still open; get_next_action waits for them when your next step needs them.", "まだ終わっていない委譲があります。次の段階でそれが必要になったときは、get_next_action が完了を待ちます。"},
	"logout.message":              {"session %s ended", "セッション %s を終了しました"},
	"logout.done":                 {"Terminate the process now.", "今すぐプロセスを終了してください。"},
	"notify_task_session.done":    {"Sent: your task session gets it with its next tool call.", "タスクセッションに通知を送信しました。次回のツール呼び出し時に通知が届きます。"}, // seed 000
	"notify_task_session.no_session": {
		"Sent. You have no live task session now: your next task session gets it with its first tool call. If no task work is under way, start it with start_task_from_chat, or ask for it with request_task.",
		"タスクセッションに通知を送信しました。現在稼働中のタスクセッションはないため、次に始まるタスクセッションの最初のツール呼び出し時に通知が届きます。タスクの作業が始まっていなければ、start_task_from_chat で開始するか、request_task で依頼してください。"},
	"reject_task_request.done": {
		"Task %s is rejected and will not be worked on. Let %s know if they are waiting for it.",
		"タスク %[1]s を却下しました。このタスクの作業は行われません。%[2]s が待っている場合は知らせてください。"},
	"report_completed.done": {
		"Reported. Your task session has ended: exit now, without calling get_next_action or logout.",
		"報告しました。タスクセッションは終了しました。get_next_action も logout も呼び出さずに、今すぐ終了してください。"},
	"report_completed.released_cancelled":  {"Task %s was cancelled by %s, so your report did not change it. ", "タスク %[1]s は %[2]s によってキャンセルされたため、報告でタスクは変更していません。"},
	"report_completed.released_reassigned": {"Task %s is now assigned to %s, so your report did not change it. ", "タスク %[1]s は現在 %[2]s に割り当てられているため、報告でタスクは変更していません。"},
	"report_completed.released_paused": {
		"The project is paused, so your report did not change task %s: it stays %s, and work on it goes on when the project is resumed. ",
		"プロジェクトが一時停止中のため、報告でタスク %[1]s は変更していません。タスクは %[2]s のままで、プロジェクトの再開後に作業が続けられます。"},
	"report_completed.released": {
		"Your summary is kept in your execution record. Your task session has ended: exit now, without calling get_next_action or logout.",
		"サマリーは実行記録に残しました。タスクセッションは終了しました。get_next_action も logout も呼び出さずに、今すぐ終了してください。"},
	"report_delegation_completed.notice": {
		"Your chat session finished delegation %s (%s) with %s: %s",
		"チャットセッションが %[3]s との委譲 %[1]s を終えました（%[2]s）: %[4]s"},
	"report_delegation_completed.notice_instruction": {
		"Use the result in your task; get_task_conversations shows it, get_conversation_messages the conversation.",
		"結果をタスクに活かしてください。結果は get_task_conversations で、会話は get_conversation_messages で確認できます。"},
	"report_delegation_completed.done": {"Recorded; your task session sees it. Call get_next_action.", "記録しました。タスクセッションに伝わります。get_next_action を呼び出してください。"},
	"request_task.approved": {
		"Task %s is in your backlog, approved: %s, who asked for it, is one of your superiors. " +
			"Tell them it is planned; it starts once it is moved to todo and then in_progress.",
		"タスク %[1]s をあなたの backlog に追加しました。依頼した %[2]s はあなたの上位者なので、承認済みです。" +
			"予定に入ったことを伝えてください。todo、続いて in_progress に移されると開始されます。"},
	"request_task.asked": {
		"Task %s is in your backlog, waiting for approval by one of your superiors (asked: %s). " +
			"Do not work on it yet. Tell %s that the request awaits approval.",
		"タスク %[1]s をあなたの backlog に追加しました。上位者の承認待ちです（承認を依頼した相手: %[2]s）。" +
			"まだ作業しないでください。%[3]s に、依頼が承認待ちであることを伝えてください。"},
	"request_task.unasked": {
		"Task %s is in your backlog, waiting for approval by one of your superiors " +
			"(no human superior to ask: your manager can approve it with approve_task_request). Do not work on it yet.",
		"タスク %[1]s をあなたの backlog に追加しました。上位者の承認待ちです" +
			"（依頼できる人間の上位者はいません。マネージャーが approve_task_request で承認できます）。まだ作業しないでください。"},
	"select_action.done": {"Call get_next_action.", "get_next_action を呼び出してください。"},
	"select_action.moot": {"Not selected: the situation changed since get_next_action offered it (see moot). next_action is what to do now; call get_next_action to go on.", "選択されませんでした。get_next_action が提示した後に状況が変わりました（moot を参照）。next_action が現在の指示です。get_next_action を呼び出して続けてください。"},
	"send_message.done":  {"Sent. Call get_next_action to wait for the answer.", "送信しました。get_next_action を呼び出して返答を待ってください。"},
	"send_message.last":  {"Sent. That was turn %d of %d: the conversation has ended (max_turns). Call get_next_action.", "送信しました。%[2]d 回中 %[1]d 回目のメッセージだったため、会話は終了しました（max_turns）。get_next_action を呼び出してください。"},
	"split_task.done":    {"Split done. Call get_next_action.", "分割しました。get_next_action を呼び出してください。"},
	"start_conversation.done": { // seed 002, then what aipm adds
		"Conversation requested. You may send_message to %s now; it reads them once its chat session accepts. Call get_next_action to wait for the answer.",
		"会話リクエストを送信しました。send_messageでメッセージを送信できます。相手がオンラインになると会話が開始されます。（相手: %[1]s。メッセージは相手のチャットセッションが承諾した後に読まれます。）get_next_action を呼び出して返答を待ってください。"},
	"start_task_from_chat.done": { // seed 000 word for word, then what aipm adds
		"Task started. End the chat session and start the work in the task session. (Before you end it with logout, tell %s the task is under way; do not do the work here. The task session is started for you.)",
		"タスクを開始しました。チャットセッションを終了し、タスクセッションで作業を開始してください。（logout で終了する前に、%[1]s に着手したことを伝えてください。作業はここでは行わないでください。タスクセッションは自動的に起動されます。）"},
	"update_task_from_chat.done":      {"Updated. Tell %s what changed.", "タスクを更新しました。%[1]s に変更内容を伝えてください。"}, // seed 000, then what aipm adds
	"update_task_from_chat.unchanged": {"Nothing changed: the task already had these values.", "変更はありません。タスクはすでにこれらの値でした。"},
	"update_task_status.done":         {"Call get_next_action for the next step.", "get_next_action を呼び出して次の段階を確認してください。"},
	"update_task_status.all_finished": {"Every sub-task is finished. Call get_next_action: it confirms and tells you how to report.", "すべてのサブタスクが終了しました。get_next_action を呼び出してください。確認のうえ、報告の仕方を指示します。"},

	// help and get_session_guide.
	"help.authenticate_first": {"call authenticate first", "先に authenticate を呼び出してください"},
	"help.unauthenticated":    {"Most tools need a session: call authenticate with your agent_id and passkey.", "ほとんどのツールにはセッションが必要です。agent_id と passkey で authenticate を呼び出してください。"},
	"help.task_session":       {"Chat tools are not available in a task session; use delegate_to_chat_session.", "タスクセッションではチャット用のツールは使えません。delegate_to_chat_session を使ってください。"},
	"help.chat_session":       {"Task tools are not available in a chat session; use notify_task_session.", "チャットセッションではタスク用のツールは使えません。notify_task_session を使ってください。"},
	"session_guide": {
		"You may hold two sessions at once, in two processes: a task session and a chat session. " +
			"They are the same you and share responsibility. " +
			"The task session does all task work: it reads its task, decomposes it, executes or (as a manager) dispatches it, and reports completion; it never messages anyone directly — to talk to another agent it calls delegate_to_chat_session. " +
			"The chat session talks with humans and other agents: it reads and answers messages, holds conversations, and processes delegations; it never changes tasks directly — it passes agreements to the task session with notify_task_session. " +
			"Chat tools are refused in a task session (chat_session_required) and task tools in a chat session (task_session_required).",
		"あなたは2つのプロセスで、タスクセッションとチャットセッションの2つのセッションを同時に持つことがあります。" +
			"どちらも同じあなたであり、責任を共有します。" +
			"タスクセッションはタスクの作業をすべて担います。タスクを読み、分解し、実行する（マネージャーならディスパッチする）、そして完了を報告します。誰にも直接メッセージを送らず、他のエージェントと話すには delegate_to_chat_session を呼び出します。" +
			"チャットセッションは人間や他のエージェントと話します。メッセージを読んで応答し、会話を行い、委譲を処理します。タスクを直接変更することはなく、合意した内容は notify_task_session でタスクセッションに伝えます。" +
			"タスクセッションではチャット用のツールが（chat_session_required）、チャットセッションではタスク用のツールが（task_session_required）拒否されます。"},
}
