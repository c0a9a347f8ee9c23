"""The lexical tests behind the ``change_reader`` feature: does a request ask for a change, does a tool only read."""

from __future__ import annotations

import pytest

from toolrag.catalog.profile import ToolProfile
from toolrag.decision.actions import change_verb, reads_only, vague_word


@pytest.mark.parametrize(("text", "verb"), [
    ("approve my team's pending leave requests", "approve"),
    ("Please delete the account of the intern who left", "delete"),
    ("can you book a room for Friday", "book"),
    ("I need to pay the supplier invoice", "pay"),
    ("go ahead and approve this month's payroll", "approve"),
    ("permanently remove the AD account of b.miller", "remove"),  # an adverb in -ly before the verb
    ("roll back payment-svc in prod", "roll back"),              # the particle is kept for the reason
    ("sign off on claim EXP-2024-1043 please", "sign off"),
    ("把我们部门的预算调高 10 万", "调高"),                        # with 把 the verb comes after its object
    ("订一张明天北京飞上海的机票", "订一"),
    ("帮我报销这张出租车票", "报销"),
    ("把这些记录提交给财务", "提交"),               # a noun after the verb's object, not the verb's own
    ("提交一下我的报销单", "提交"),
])
def test_requests_that_ask_for_a_change(text: str, verb: str) -> None:
    assert change_verb(text) == verb


@pytest.mark.parametrize("text", [
    "where is my order?",                     # the verb is not where a request of change starts
    "how many days of leave do I have left",
    "check the status of my expense claim",   # a read verb
    "the train schedule to Shanghai",
    "open notes.txt and tell me what it says",  # open to read
    "confirm whether the branch exists",
    "报销单 EXP-2024-0877 打款了没",            # 报销 as a noun (an expense form)
    "安全库存是怎么设置的",                      # a question how something is set, not a request to set it
    "发票的金额是多少",                          # 发 of 发票 (invoice) is not 发送 (send)
    "看看 octo/app 最近的提交记录",              # 提交记录: commit history, a noun
    "帮我查一下最新的 Python 3.13 发布说明",      # 发布说明: release notes
    "我的报销进度怎么样了",                        # 报销进度: how far a claim has got
    "",
])
def test_requests_that_do_not(text: str) -> None:
    assert change_verb(text) is None


def _tool(tool_id: str, description: str, *, name: str | None = None, mutation: bool = False) -> ToolProfile:
    return ToolProfile(id=tool_id, name=name or tool_id.rsplit(".", 1)[-1], description=description,
                       mutation=mutation)


@pytest.mark.parametrize(("tool", "reads"), [
    (_tool("hr.payslip.view", "Shows a payslip."), True),                         # a read verb in the name
    (_tool("erp.stock.get", "Reads the stock."), True),
    (_tool("gh.get_issue", "Gets an issue."), True),                              # "issue" is a noun in a name
    (_tool("fs.read_file", "Reads a file."), True),
    (_tool("hr.leave.balance", "Returns the caller's remaining leave."), True),   # no verb in the name: the
    (_tool("finance.budget.remaining", "查询部门预算的剩余金额。"), True),            # description's first word
    (_tool("finance.expense.status", "Shows where claims stand."), True),
    (_tool("erp.purchase_order.create", "Creates a purchase order."), False),    # a verb of change
    (_tool("it.account.delete_user", "Deletes a user."), False),
    (_tool("travel.flight.search", "Searches flights.", mutation=True), False),  # declared a mutation
    (_tool("WeatherTool", "Plugin for weather."), False),                        # says nothing: not a reader
    (_tool("it.access.request", "Files a request for access."), False),
])
def test_tools_that_only_read(tool: ToolProfile, reads: bool) -> None:
    assert reads_only(tool) is reads


@pytest.mark.parametrize(("text", "word"), [
    ("schedule something", "something"),
    ("Something about the budget, can you sort it?", "something"),  # at the start of the request
    ("where's the stuff we ordered from Acme Supply?", "stuff"),
    ("can you do the expense thing", "the expense thing"),
    ("处理一下这张发票", "处理一下"),
    ("报销的事帮我弄一下", "弄一下"),
    ("这个报错怎么办", "怎么办"),
])
def test_placeholders_for_what_a_request_leaves_unsaid(text: str, word: str) -> None:
    assert vague_word(text) == word


@pytest.mark.parametrize("text", [
    "schedule a 30 minute call with Tom tomorrow at 11",
    "I'm looking for a chick lit book called 'Something Borrowed'",  # a title, not a placeholder
    "can you recommend something exciting to play",                  # the user asks the tool to choose
    "something is wrong with my laptop, the screen flickers",        # the subject of a described problem
    "帮我查一下东京现在几点",                                              # 一下 alone only softens the request
])
def test_requests_without_a_placeholder(text: str) -> None:
    assert vague_word(text) is None
