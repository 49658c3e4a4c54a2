-- Reads documents from stdin, each framed as "<format> <byte count>\n<bytes>", and writes
-- each one's HTML, as Pandoc renders it from that format, to stdout framed as
-- "<byte count>\n<bytes>". Byte counts frame the documents: no text inside one can end it
-- or run into the next, as a separator could (an unclosed comment or fence would).
-- Run as a filter of an empty document: `pandoc --lua-filter this.lua -o /dev/null /dev/null`.
function Pandoc(doc)
  while true do
    local header = io.stdin:read("l")
    if header == nil then break end
    local format, size = header:match("^(%S+) (%d+)$")
    local html = pandoc.write(pandoc.read(io.stdin:read(tonumber(size)) or "", format), "html")
    io.stdout:write(#html, "\n", html)
  end
  io.stdout:flush()
  return doc
end
