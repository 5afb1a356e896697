/**
 * The HTML report's stylesheet and script, inlined into the page. The script only reads the page:
 * it opens transcripts, filters the agent table and builds a round's input from the page's JSON
 * blocks with `textContent` (never as markup), so nothing an agent wrote can run.
 */
import { createHash } from 'node:crypto';

/**
 * The `<meta>` Content-Security-Policy of a self-contained page whose one script is `script`: that
 * script runs (allowed by its SHA-256), no other does (inline or not, whatever a text escaped
 * wrongly might one day hold), and nothing is fetched from anywhere (the page works offline and
 * cannot send what it shows). Styles may be inline; images only `data:` URLs.
 */
export function securityPolicyMeta(script: string): string {
  const hash = createHash('sha256').update(script, 'utf8').digest('base64');
  const policy = [
    "default-src 'none'",
    `script-src 'sha256-${hash}'`,
    "style-src 'unsafe-inline'",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  return `<meta http-equiv="Content-Security-Policy" content="${policy}">`;
}

export const REPORT_STYLE = `
:root{--fg:#0f172a;--muted:#64748b;--line:#e2e8f0;--ok:#16a34a;--bad:#dc2626;--warn:#d97706;--bg:#f8fafc}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px}h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px}h4{margin:14px 0 6px;font-size:14px}
a{color:#1d4ed8}.sub{color:var(--muted)}.banner{margin:14px 0;padding:10px 14px;border-radius:8px;background:#fef3c7;border:1px solid #fcd34d}.banner.damaged{background:#fee2e2;border-color:#fca5a5}.banner ul{margin:6px 0 0;padding-left:20px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));gap:10px;margin-top:16px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 12px}.card b{display:block;font-size:20px}.card span{color:var(--muted);font-size:12px}.card small{display:block;color:var(--muted);font-size:11px}
section{background:#fff;border:1px solid var(--line);border-radius:10px;padding:14px 16px;margin-top:16px}section h2{margin-top:0}
svg text{font-size:11px;fill:var(--fg)}svg .muted,svg .tick-label{fill:var(--muted)}svg .tick-label{text-anchor:middle}
svg .tick{stroke:var(--line)}svg .group{font-weight:600}svg .group-line{stroke:#cbd5e1}
.row{cursor:pointer}.row .bar{fill:#dcfce7;stroke:var(--ok)}.status-failed .bar{fill:#fee2e2;stroke:var(--bad)}.status-interrupted .bar{fill:#fef3c7;stroke:var(--warn)}
.row .model{fill:#64748b}.row .queued{fill:#cbd5e1}.row .backoff{fill:#ef4444}.row .wait{fill:#f59e0b;opacity:.8}
.row .down{fill:#fecaca;opacity:.7}.row .tool-failed{stroke:var(--bad);stroke-width:1.5}.row .tool-open{opacity:.55}
.row .round{stroke:#475569;stroke-width:1}.row .retry{fill:#dc2626}.row .restart{fill:#7c3aed}.row.hl .bar{stroke-width:3}.row.hl .label{font-weight:700}
.run-lane .session{fill:#e0e7ff;stroke:#6366f1}.run-lane .provider-pause{fill:#fca5a5}.crash-mark{fill:var(--bad);font-weight:700}.respawn-mark{fill:#7c3aed}
g.crash line{stroke:var(--bad);stroke-dasharray:3 2}g.crash text{fill:var(--bad);font-size:10px}g.respawn line{stroke:#7c3aed;stroke-dasharray:2 3}g.respawn text{fill:#7c3aed;font-size:10px}
.chart .input{fill:#3b82f6}.chart .output{fill:#a855f7}.chart .cost{fill:#0d9488}.chart .value{fill:var(--muted)}
.legend{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0;color:var(--muted);font-size:12px}.key i{display:inline-block;width:12px;height:10px;margin-right:4px;border-radius:2px;vertical-align:middle}
.key i.down-key{background:#fecaca}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}tr.agent{cursor:pointer}tr.agent:hover{background:#f1f5f9}
.completed{color:var(--ok)}.failed{color:var(--bad)}.interrupted,.not-run,.warn{color:var(--warn)}
.tag{display:inline-block;padding:0 6px;border-radius:9px;background:#e0f2fe;color:#075985;font-size:11px}
pre,.preview{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word;background:#f1f5f9;padding:8px;border-radius:6px;max-height:360px;overflow:auto;margin:4px 0}
.preview{display:block}details.more>summary{list-style:none;cursor:pointer}details.more>summary .expand{color:#1d4ed8;font-size:12px}details.more[open]>summary .preview{display:none}
details.more[open]>summary .expand::before{content:"hide "}
input[type=search]{padding:6px 10px;border:1px solid var(--line);border-radius:6px;width:260px;margin-bottom:8px}
details.transcript{border:1px solid var(--line);border-radius:8px;margin:8px 0;background:#fff}details.transcript>summary{padding:8px 10px;cursor:pointer}
details.transcript[open]>summary{border-bottom:1px solid var(--line);background:#f8fafc}details.transcript.hl{box-shadow:0 0 0 3px #93c5fd}
.t-body{padding:8px 14px 12px}.dot{display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:6px;background:var(--ok)}
.dot.status-failed{background:var(--bad)}.dot.status-interrupted,.dot.status-not-run{background:var(--warn)}
dl.facts{display:grid;grid-template-columns:140px 1fr;gap:2px 12px;margin:4px 0 10px;font-size:13px}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
details.sec,details.input{margin:4px 0}details.sec>summary,details.input>summary{cursor:pointer;color:#334155;font-weight:600}
.round{border-left:3px solid #cbd5e1;padding-left:12px;margin:12px 0}
ol.entries{list-style:none;padding:0;margin:6px 0}ol.entries>li{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:6px 0}
li.e-request{background:#f8fafc}li.e-text{border-left:3px solid #6366f1}li.e-tool{border-left:3px solid #94a3b8}li.e-state{background:#fefce8}
li.e-resumed{background:#f5f3ff;border-color:#c4b5fd}li.e-note{background:#fff7ed}li.e-approval{background:#ecfeff}
.head{font-size:13px}.chip{display:inline-block;color:#fff;padding:0 7px;border-radius:9px;font-size:12px;font-weight:600}
ul.retries{margin:4px 0 0 0;padding-left:18px;color:var(--bad);font-size:12px}p.e-wait{margin:6px 0 0;color:#b45309}p.e-approval{margin:6px 0 0;color:#1d4ed8}p.e-approval.failed{color:var(--bad)}
.outcome{margin-top:12px;padding:8px 12px;border-radius:8px}.outcome.completed{background:#f0fdf4;color:inherit}.outcome.failed{background:#fef2f2;color:inherit}.outcome.interrupted{background:#fffbeb;color:inherit}
.view-agents{display:none}#zoom-agents:checked~.view-agents{display:block}#zoom-agents:checked~.view-run{display:none}
input[name=zoom]{margin:0 4px 8px 0}label[for^=zoom]{margin-right:14px;font-size:13px;color:#334155}
.input-body .sec-list{margin:4px 0 4px 12px}.input-body .superseded{color:var(--muted);font-style:italic}.input-body h5{margin:8px 0 2px;font-size:12px;color:#334155}
`;

export const REPORT_SCRIPT = `
(function(){
function openAgent(id){var el=document.getElementById(id);if(!el)return;
  document.querySelectorAll('.hl').forEach(function(x){x.classList.remove('hl')});
  if(el.tagName==='DETAILS')el.open=true;el.classList.add('hl');
  var row=document.querySelector('.row[data-t="'+id+'"]');if(row)row.classList.add('hl');
  el.scrollIntoView({block:'start',behavior:'smooth'});}
document.querySelectorAll('[data-t]').forEach(function(n){n.addEventListener('click',function(ev){
  if(ev.target&&ev.target.closest&&ev.target.closest('a'))return;var id=n.getAttribute('data-t');
  if(history.replaceState)history.replaceState(null,'','#'+id);openAgent(id);});});
window.addEventListener('hashchange',function(){openAgent(location.hash.slice(1))});
if(location.hash.length>1)openAgent(location.hash.slice(1));
var filter=document.getElementById('filter');if(filter){filter.addEventListener('input',function(){var q=filter.value.toLowerCase();
  document.querySelectorAll('tr.agent').forEach(function(row){row.style.display=row.textContent.toLowerCase().indexOf(q)<0?'none':''})})}
var cache={};
function data(i){if(!(i in cache)){var s=document.getElementById('d-'+i);cache[i]=s?JSON.parse(s.textContent):null}return cache[i]}
function el(tag,cls,text){var n=document.createElement(tag);if(cls)n.className=cls;if(text!==undefined)n.textContent=text;return n}
function block(title,items){var d=el('details','sec');var s=el('summary','',title);d.appendChild(s);items.forEach(function(x){d.appendChild(x)});return d}
function text(t,cls){return el('pre',cls||'',t)}
document.addEventListener('toggle',function(ev){var d=ev.target;
  if(!d.classList||!d.classList.contains('input')||!d.open||d.getAttribute('data-built'))return;
  var x=data(d.getAttribute('data-data'));var r=x&&x.r[Number(d.getAttribute('data-round'))];var body=d.querySelector('.input-body');
  if(!r||!body)return;body.textContent='';var T=x.t;
  if(x.c.length)body.appendChild(block('Context ('+x.c.length+' section'+(x.c.length===1?'':'s')+')',x.c.map(function(i){return text(T[i])})));
  body.appendChild(block('Task',[text(T[x.k])]));
  body.appendChild(block('History ('+r.h.length+' entr'+(r.h.length===1?'y':'ies')+', '+r.h.filter(function(h){return h[1]}).length+' superseded)',r.h.map(function(h){return text(T[h[0]],h[1]?'superseded':'')})));
  body.appendChild(block('States ('+r.s.length+')',r.s.map(function(s){var w=el('div','sec-list');w.appendChild(el('h5','',T[s[0]]));w.appendChild(text(T[s[1]]));return w})));
  d.setAttribute('data-built','1');},true);
})();
`;
