/*
 * What the console's pages (GET /, status_pages.c; GET /cluster,
 * clusterpage.c) share: their style sheet, their script's helpers and
 * the headers they are served with (a Content-Security-Policy that
 * allows nothing from elsewhere; text from the web is inserted with
 * textContent only).
 */
#ifndef KRIA_SERVICE_CONSOLE_H
#define KRIA_SERVICE_CONSOLE_H

/* The style sheet's rules (inside <style>). */
#define KR_CONSOLE_STYLE \
    ":root{--bg:#0f1419;--panel:#182129;--line:#26313b;--fg:#d9e0e6;--mute:#8b98a5;" \
    "--acc:#4fb3d9;--ok:#7bc96f;--warn:#e3b341;--bad:#f47067}\n" \
    "*{box-sizing:border-box}\n" \
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;" \
    "background:var(--bg);color:var(--fg)}\n" \
    "header{display:flex;flex-wrap:wrap;gap:14px;align-items:baseline;padding:14px 22px;" \
    "border-bottom:1px solid var(--line)}\n" \
    "h1{font-size:20px;margin:0;letter-spacing:.02em}\n" \
    ".pill{padding:1px 10px;border-radius:10px;font-weight:600;font-size:13px;background:var(--line)}\n" \
    ".running{background:#1f3b2a;color:var(--ok)}.paused{background:#3d3419;color:var(--warn)}" \
    ".stopping{background:#40201f;color:var(--bad)}\n" \
    ".mute{color:var(--mute)}\n" \
    "main{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:14px;" \
    "padding:14px 22px}\n" \
    ".tiles{grid-column:1/-1;display:grid;grid-template-columns:repeat(auto-fill,minmax(112px,1fr));" \
    "gap:10px}\n" \
    ".tile{background:var(--panel);border-radius:8px;padding:10px 12px}\n" \
    ".tile b{display:block;font-size:22px;font-variant-numeric:tabular-nums}\n" \
    ".tile span{color:var(--mute);font-size:12px}\n" \
    "section{background:var(--panel);border-radius:8px;padding:12px 14px;min-height:120px}\n" \
    "h2{font-size:12px;margin:0 0 10px;color:var(--mute);font-weight:600;text-transform:uppercase;" \
    "letter-spacing:.06em}\n" \
    ".row{display:grid;grid-template-columns:84px 1fr 64px;gap:8px;align-items:center;margin:4px 0;" \
    "font-size:13px}\n" \
    ".row .n{text-align:right;color:var(--mute);font-variant-numeric:tabular-nums}\n" \
    ".bar{height:12px;background:var(--acc);border-radius:3px;min-width:1px}\n" \
    ".cols{display:flex;align-items:flex-end;gap:2px;height:110px;border-bottom:1px solid var(--line)}\n" \
    ".cols div{flex:1;background:var(--acc);min-height:1px;border-radius:2px 2px 0 0}\n" \
    "table{width:100%;border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}\n" \
    "th{color:var(--mute);font-weight:600;font-size:12px}\n" \
    "td,th{padding:3px 6px;text-align:right;border-bottom:1px solid var(--line)}\n" \
    "td:first-child,th:first-child{text-align:left;max-width:170px;overflow:hidden;" \
    "text-overflow:ellipsis;white-space:nowrap}\n" \
    ".bad{color:var(--bad)}.ok{color:var(--ok)}\n" \
    "footer{padding:4px 22px 16px;color:var(--mute);font-size:12px}\n"

/* $(id), el(tag, class, text), num(n), dur(ms), tile(label, value, sub) */
#define KR_CONSOLE_JS \
    "const $=id=>document.getElementById(id);\n" \
    "function el(t,c,x){const e=document.createElement(t);if(c)e.className=c;" \
    "if(x!=null)e.textContent=x;return e}\n" \
    "function num(n){if(n==null)return'n/a';if(n>=1e9)return(n/1e9).toFixed(1)+'G';" \
    "if(n>=1e6)return(n/1e6).toFixed(1)+'M';if(n>=1e4)return(n/1e3).toFixed(1)+'k';" \
    "return String(Math.round(n*10)/10)}\n" \
    "function dur(ms){if(ms==null)return'n/a';const s=ms/1e3;if(s<1)return'< 1 s';" \
    "if(s<60)return Math.round(s)+' s';if(s<3600)return Math.floor(s/60)+' min '+Math.round(s%60)+' s';" \
    "if(s<86400)return Math.floor(s/3600)+' h '+Math.round(s%3600/60)+' min';" \
    "return Math.floor(s/86400)+' d '+Math.round(s%86400/3600)+' h'}\n" \
    "function tile(l,v,sub){const t=el('div','tile');t.append(el('b',null,v));t.append(el('span',null,l));" \
    "if(sub)t.append(el('div','mute',sub));return t}\n"

extern const char kr__console_headers[];

#endif
