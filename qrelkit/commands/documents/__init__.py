"""What each use case's result says, as a `qrelkit.report.document.Document`: the one description of
a result that every format renders (issue 42). A request names its builder (``document``), a
function ``(result, request) -> Document`` in one of these modules; report/ renders documents and
knows no result's type, and cli/ only prints them."""
