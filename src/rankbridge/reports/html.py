# ruff: noqa: E501  (the HTML template and its CSS keep long lines readable as markup)
"""The report as one self-contained HTML file: tables, plain-language readings and inline SVG plots.

The file needs no network to open: styles are inline, plots are inline SVG (see :mod:`.plots`), there is
no external script, stylesheet, font or image. The one inline script (:data:`SELECTOR_JS`) is the trend's run
selector; it holds no data. Jinja2 renders it with autoescaping on, so every string
that came from data (questions, chunk texts, run and category names) is escaped and shows as text.

Examples
--------
>>> from rankbridge.analysis import compare
>>> from rankbridge.reports import build_report
>>> cmp = compare({"<b>bm25</b>": {"q1": ["d1"]}}, {"q1": {"d1": 1}}, ["P@1"])
>>> page = render(build_report(cmp, generated_at="2024-01-01"), plots=False)
>>> page.startswith("<!DOCTYPE html>"), "&lt;b&gt;bm25&lt;/b&gt;" in page, "<b>bm25</b>" in page
(True, True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rankbridge.errors import MissingExtraError
from rankbridge.reports.cells import RELEVANCE_CLASSES, fmt_ci, fmt_diff, fmt_p, fmt_pct, fmt_value
from rankbridge.reports.plots import render_plots, trend_groups

if TYPE_CHECKING:  # pragma: no cover
    from rankbridge.reports.model import Report

__all__ = ["render"]

CSS = """
.rb-report{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--accent:#0072B2;--good:#1a7f37;
 --bad:#cf222e;--warn:#9a6700;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
 color:var(--fg);line-height:1.45;font-size:14px;max-width:1180px;margin:0 auto;padding:24px 28px 48px}
.rb-report h1{font-size:26px;margin:0 0 4px}
.rb-report h2{font-size:19px;margin:36px 0 8px;padding-bottom:6px;border-bottom:1px solid var(--line)}
.rb-report h3{font-size:15px;margin:20px 0 6px}
.rb-report .meta{color:var(--muted);margin:0 0 8px}
.rb-report nav{font-size:13px;margin:10px 0 0;color:var(--muted)}
.rb-report nav a{color:var(--accent);text-decoration:none;margin-right:12px}
.rb-report .lead{color:var(--muted);margin:4px 0 12px;max-width:900px}
.rb-report .cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:12px;margin-top:12px}
.rb-report .card{border:1px solid var(--line);border-radius:8px;padding:12px 14px;background:#fff}
.rb-report .card .metric{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.rb-report .card .value{font-size:30px;font-weight:650;margin:2px 0 0}
.rb-report .card .ci{color:var(--muted);font-size:12.5px}
.rb-report .card .reading{margin:8px 0 6px}
.rb-report .card .versus{font-size:12.5px;color:var(--muted);margin:0}
.rb-report .card .versus.sig{color:var(--good)}
.rb-report .card .versus.sig.neg{color:var(--bad)}
.rb-report .card.rec{max-width:900px;border-width:2px}
.rb-report .card.rec.sig{border-color:var(--good)}
.rb-report .warnings{border-left:4px solid #d4a72c;background:#fff8c5;padding:8px 14px 8px 30px;margin:16px 0;
 border-radius:0 6px 6px 0}
.rb-report .warnings li{margin:3px 0}
.rb-report table{border-collapse:collapse;margin:10px 0 6px;font-size:13px;font-variant-numeric:tabular-nums}
.rb-report th,.rb-report td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
.rb-report th{background:var(--soft);font-weight:600;white-space:nowrap}
.rb-report th.l,.rb-report td.l{text-align:left}
.rb-report tr.first td{border-top:2px solid var(--line)}
.rb-report td.ci{white-space:nowrap;color:var(--muted);font-size:12.5px}
.rb-report .legend{color:var(--muted);font-size:12.5px;margin:4px 0}
.rb-report .legend b{color:var(--fg)}
.rb-report td.run{white-space:nowrap;text-align:left}
.rb-report td.sig{font-weight:650;color:var(--good)}
.rb-report td.sig.neg{color:var(--bad)}
.rb-report td.muted,.rb-report .muted{color:var(--muted)}
.rb-report td.text{text-align:left;max-width:360px;overflow-wrap:anywhere}
.rb-report td.ids{text-align:left;max-width:220px;overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.rb-report .scroll{overflow-x:auto}
.rb-report figure{margin:12px 0;padding:0}
.rb-report svg.plot{width:100%;height:auto;max-width:1100px;display:block}
.rb-report details{margin:8px 0;border:1px solid var(--line);border-radius:6px;padding:6px 12px}
.rb-report details>summary{cursor:pointer;font-weight:600}
.rb-report .note{background:var(--soft);border-radius:6px;padding:10px 14px;margin:10px 0}
.rb-report .notes li{margin:4px 0;color:var(--muted)}
.rb-report footer{margin-top:40px;color:var(--muted);font-size:12px}
"""

TEMPLATE = r"""
{%- macro query_table(items, with_value, metric) -%}
<div class="scroll"><table>
<tr><th class="l">question</th>{% if with_value %}<th>{{ metric }}</th>{% endif %}<th>first relevant</th>
<th class="l">expected</th><th class="l">retrieved <span class="muted">(relevant in bold)</span></th><th class="l">top chunk</th></tr>
{%- for it in items %}
<tr><td class="text"><b>{{ it.query_id }}</b>{% if it.query %}: {{ it.query }}{% endif %}</td>
{%- if with_value %}<td>{{ it.value|v }}</td>{% endif %}
<td>{{ it.first_relevant_rank if it.first_relevant_rank is not none else "-" }}</td>
<td class="ids">{{ it.expected[:5]|join(", ") or "-" }}</td>
<td class="ids">{% for d in it.retrieved %}{% if d in it.expected %}<b>{{ d }}</b>{% else %}{{ d }}{% endif %}{{ ", " if not loop.last }}{% else %}-{% endfor %}</td>
<td class="text">{% if it.error %}<span class="muted">error: {{ it.error }}</span>{% elif it.top_text %}{{ it.top_text }}{% else %}<span class="muted">-</span>{% endif %}</td></tr>
{%- endfor %}
</table></div>
{%- endmacro -%}
{#- a plot, and its numbers in a table that starts open when there is no plot -#}
{%- macro plotted_table(plot, summary) -%}
{% if plot %}<figure>{{ plot }}</figure>{% endif %}
<details{% if not plot %} open{% endif %}><summary>{{ summary }}</summary>
<div class="scroll"><table>
{{ caller() }}
</table></div>
</details>
{%- endmacro -%}
<div class="rb-report">
<style>{{ css }}</style>
<header>
<h1>{{ r.title }}</h1>
<p class="meta">{{ r.num_queries }} questions · {{ r.runs|length }} strateg{{ "y" if r.runs|length == 1 else "ies" }}:
{{ r.runs|join(", ") }} · baseline <b>{{ r.baseline }}</b>{% if r.qrels_name %} · judgments {{ r.qrels_name }}{% endif %}
· {{ "%.0f"|format(100 * r.settings.level) }}% intervals · {{ r.settings.test }} test,
{{ "Holm-adjusted" if r.settings.correction == "holm" else "unadjusted" }} p (alpha {{ r.settings.alpha }})</p>
<nav>{% if r.recommendation %}<a href="#rb-recommendation">Recommendation</a>{% endif %}<a href="#rb-headlines">Headlines</a><a href="#rb-strategies">Strategies</a>
{%- if r.rerank %}<a href="#rb-rerank">Reranker</a>{% endif %}
{%- if r.cutoffs %}<a href="#rb-cutoffs">Rank cut-offs</a>{% endif %}
{%- if r.categories %}<a href="#rb-categories">Categories</a>{% endif %}
{%- if r.relevance %}<a href="#rb-relevance">Relevance</a>{% endif %}
{%- if r.ragas %}<a href="#rb-ragas">RAGAS</a>{% endif %}
{%- if r.per_query %}<a href="#rb-per-query">Per question</a>{% endif %}
{%- if r.trend or r.trend_notes %}<a href="#rb-trend">Trend</a>{% endif %}
{%- if r.queries %}<a href="#rb-queries">Questions</a>{% endif %}
{%- if r.failed_top1 %}<a href="#rb-failed">Failed questions</a>{% endif %}
{%- if r.failures %}<a href="#rb-failures">Failures</a>{% endif %}<a href="#rb-notes">How to read</a></nav>
</header>

{%- if r.recommendation %}{% set rec = r.recommendation %}
<section id="rb-recommendation">
<h2>Recommended strategy</h2>
<div class="card rec{{ ' sig' if rec.significant }}"><div class="metric">by {{ rec.metric }}</div>
<div class="value">{{ rec.run }}</div>
<div class="ci">{{ rec.metric }} {{ rec.value.estimate|v }} {{ rec.value|ci }}{% if rec.runner_up %} · runner-up {{ rec.runner_up }} {{ rec.runner_up_value.estimate|v }}{% endif %}</div>
<p class="reading">{{ rec.text }}</p>
{%- for n in rec.notes %}<p class="versus">{{ n }}</p>{% endfor %}
</div>
</section>
{%- endif %}

<section id="rb-headlines">
<h2>Headlines</h2>
<div class="cards">
{%- for h in r.headlines %}
<div class="card"><div class="metric">{{ h.metric }} · best: {{ h.run }}</div>
<div class="value">{{ h.value.estimate|v }}</div>
<div class="ci">{{ "%.0f"|format(100 * r.settings.level) }}% CI {{ h.value|ci }}</div>
<p class="reading">{{ h.reading|capfirst }}.</p>
{%- if h.versus %}<p class="versus{{ ' sig' if h.significant }}">{{ h.versus }}</p>{% endif %}
</div>
{%- endfor %}
</div>
{%- if r.warnings %}
<ul class="warnings">{% for w in r.warnings %}<li>{{ w }}</li>{% endfor %}</ul>
{%- endif %}
</section>

<section id="rb-strategies">
<h2>Strategies</h2>
<p class="lead">Mean of each metric per strategy with its {{ "%.0f"|format(100 * r.settings.level) }}% interval, and the
paired difference to the baseline <b>{{ r.baseline }}</b> over the same questions.</p>
{% if plots.metrics %}<figure>{{ plots.metrics }}</figure>{% endif %}
<div class="scroll"><table>
<tr><th class="l">metric</th><th class="l">run</th><th>mean</th><th>CI</th><th>vs {{ r.baseline }}</th><th>CI</th>
<th>p</th><th>p adj</th><th>d</th><th>W/T/L</th>{% if partial %}<th class="l">scored</th>{% endif %}</tr>
{%- for row in r.strategies %}{% set first = loop.first or row.metric != r.strategies[loop.index0 - 1].metric %}
<tr{% if first %} class="first"{% endif %}>
<td class="l">{% if first %}<b>{{ row.metric }}</b>{% endif %}</td><td class="run">{{ row.run }}{% if row.baseline %} <span class="muted">(baseline)</span>{% endif %}</td>
<td title="{{ row.reading }}">{{ row.mean.estimate|v }}</td><td class="ci">{{ row.mean|ci }}</td>
{%- if row.difference is none %}<td></td><td></td><td></td><td></td><td></td><td></td>
{%- else %}
<td class="{{ 'sig' if row.significant }}{{ ' neg' if row.significant and row.difference.estimate < 0 }}">{{ row.difference.estimate|diff }}{{ " *" if row.significant }}</td>
<td class="ci">{{ row.difference|ci(True) }}</td><td>{{ row.pvalue|p }}</td><td{% if row.warning %} title="{{ row.warning }}"{% endif %}>{{ row.pvalue_adjusted|p }}{{ "†" if row.warning }}</td>
<td>{{ row.effect_size|v(2) }}</td><td>{{ row.wins }}/{{ row.ties }}/{{ row.losses }}</td>
{%- endif %}
{%- if partial %}<td class="l">{{ row.scored_note or ("n=%d"|format(row.mean.n)) }}{% if row.left_out %}; paired over {{ row.paired_n }}, {{ row.left_out }} left out{% endif %}</td>{% endif %}</tr>
{%- endfor %}
</table></div>
<p class="muted">* significant at alpha {{ r.settings.alpha }} after correction · † not significant, and too few questions to
detect a difference of this size (low power; hover for details) · d = Cohen's d<sub>z</sub> ·
W/T/L = questions won/tied/lost against the baseline</p>
</section>

{%- if r.rerank %}{% set rr = r.rerank %}
<section id="rb-rerank">
<h2>With and without reranker</h2>
<p class="lead">{{ rr.note }}</p>
{%- if rr.paired %}
{% if plots.rerank %}<figure>{{ plots.rerank }}</figure>{% endif %}
<div class="scroll"><table>
<tr><th class="l">strategy</th><th class="l">without reranker</th><th class="l">with reranker</th><th>{{ rr.metric }} without</th><th>{{ rr.metric }} with</th>
<th>difference</th><th>CI</th><th>p</th><th>mean relevance without (top {{ rr.depth }})</th><th>mean relevance with</th></tr>
{%- for row in rr.rows %}{% set m1 = row.values.get("with") %}{% set r1 = row.relevance.get("with") %}
<tr><td class="run">{{ row.strategy }}</td><td class="l">{{ row.without }}</td><td class="l">{{ row.with_ or "-" }}</td>
<td>{{ row.values.without.estimate|v }} <span class="muted">{{ row.values.without|ci }}</span></td>
<td>{% if m1 %}{{ m1.estimate|v }} <span class="muted">{{ m1|ci }}</span>{% else %}-{% endif %}</td>
{%- if row.difference %}<td class="{{ 'sig' if row.significant }}{{ ' neg' if row.significant and row.difference.estimate < 0 }}">{{ row.difference.estimate|diff }}{{ " *" if row.significant }}</td><td class="ci">{{ row.difference|ci(True) }}</td><td>{{ row.pvalue|p }}</td>
{%- else %}<td>-</td><td></td><td></td>{% endif %}
<td>{{ row.relevance.without.estimate|v(2) }} <span class="muted">{{ row.relevance.without|ci }}</span></td>
<td>{% if r1 %}{{ r1.estimate|v(2) }} <span class="muted">{{ r1|ci }}</span>{% else %}-{% endif %}</td></tr>
{%- endfor %}
</table></div>
{%- endif %}
</section>
{%- endif %}

{%- if r.cutoffs %}
{% set c = r.cutoffs %}
<section id="rb-cutoffs">
<h2>By rank cut-off</h2>
<p class="lead">How each measure grows (or falls) as more of the list is read: the top k is what a RAG
prompt with k chunks would see.{% if c.ks[-1] < 20 %} The deepest list has {{ c.depth }} results; deeper cut-offs
are left out.{% endif %}</p>
{% call plotted_table(plots.cutoffs, "Values") -%}
<tr><th class="l">measure</th><th class="l">run</th>{% for k in c.ks %}<th>@{{ k }}</th>{% endfor %}</tr>
{%- for m in c.measures %}{% for run, vals in c.values[m].items() %}
<tr{% if loop.first %} class="first"{% endif %}><td class="l">{{ m }}</td><td class="run">{{ run }}</td>{% for x in vals %}<td>{{ x|v }}</td>{% endfor %}</tr>
{%- endfor %}{% endfor %}
{%- endcall %}
</section>
{%- endif %}

{%- if r.categories %}
{% set cat = r.categories %}
<section id="rb-categories">
<h2>By {{ cat.by }}</h2>
<p class="lead">The same metrics within each {{ cat.by }} (n = questions in it), with intervals. Small groups have
wide intervals.</p>
{% call plotted_table(plots.categories, "Values with intervals") -%}
<tr><th class="l">{{ cat.by }}</th><th>n</th><th class="l">run</th>{% for m in cat.metrics %}<th>{{ m }}</th><th class="l">CI</th>{% endfor %}</tr>
{%- for row in cat.rows %}{% set outer = loop %}{% for run in cat.runs %}
<tr{% if loop.first %} class="first"{% endif %}>{% if loop.first %}<td class="l" rowspan="{{ cat.runs|length }}"><b>{{ row.name }}</b>{% if row.warning %}<br><span class="muted" title="{{ row.warning }}">small group</span>{% endif %}</td><td rowspan="{{ cat.runs|length }}">{{ row.n }}</td>{% endif %}
<td class="run">{{ run }}</td>
{%- for m in cat.metrics %}{% set iv = row.values[m].get(run) %}<td>{{ iv.estimate|v if iv else "-" }}</td><td class="ci l">{{ iv|ci if iv else "" }}</td>{% endfor %}</tr>
{%- endfor %}{% endfor %}
{%- endcall %}
</section>
{%- endif %}

{%- if r.relevance %}
{% set rel = r.relevance %}
<section id="rb-relevance">
<h2>Relevance of the results</h2>
<p class="lead">{{ rel.reading }}{% if rel.graded %} Labels run from 0 to {{ rel.max_label }}; a result is highly
relevant from label {{ rel.high_label }}.{% endif %} Unjudged results count as not relevant in every metric.</p>
{% if plots.relevance %}<figure>{{ plots.relevance }}</figure>{% endif %}
<div class="scroll"><table>
<tr><th class="l">run</th>{% if rel.graded %}<th>highly relevant (= {{ rel.high_label }})</th><th>relevant+ (&ge; {{ rel.relevant_label }})</th><th>not relevant (&lt; {{ rel.relevant_label }})</th>
{%- else %}<th>relevant</th><th>not relevant</th>{% endif %}<th>unjudged</th><th>mean relevance</th><th>CI</th><th>results counted</th></tr>
{%- for p in rel.profiles %}
<tr><td class="run">{{ p.run }}</td>{% if rel.graded %}<td>{{ p.shares["highly relevant"]|pct }}</td><td>{{ p.relevant_plus|pct }}</td>{% else %}<td>{{ p.shares["relevant"]|pct }}</td>{% endif %}
<td>{{ p.shares["not relevant"]|pct }}</td><td>{{ p.shares["unjudged"]|pct }}</td>
<td>{{ p.mean_relevance.estimate|v(2) if p.mean_relevance else "-" }}</td><td class="ci">{{ p.mean_relevance|ci if p.mean_relevance else "" }}</td><td>{{ p.counts.values()|sum }}</td></tr>
{%- endfor %}
</table></div>
<p class="muted">Shares of the top {{ rel.depth }} results of every question; relevant+ counts highly relevant and relevant together.
Mean relevance: per question, the mean label of its top {{ rel.depth }} (unjudged = 0), averaged over questions.</p>
{%- if rel.graded %}
<details><summary>Mean relevance label by rank</summary>
<div class="scroll"><table>
<tr><th class="l">run</th>{% for i in range(1, rel.depth + 1) %}<th>{{ i }}</th>{% endfor %}</tr>
{%- for p in rel.profiles %}
<tr><td class="run">{{ p.run }}</td>{% for x in p.mean_by_rank %}<td>{{ x|v(2) }}</td>{% endfor %}</tr>
{%- endfor %}
</table></div>
<p class="muted">Mean label at each rank over the questions with a result there; unjudged results count as 0.</p>
</details>
{%- endif %}
</section>
{%- endif %}

{%- if r.ragas %}{% set rg = r.ragas %}
<section id="rb-ragas">
<h2>RAGAS</h2>
<p class="lead">Means are over the rows RAGAS scored (n); a row it could not score is counted, not averaged.
Differences to <b>{{ r.baseline }}</b> are paired over the questions scored for both runs.</p>
<div class="scroll"><table>
<tr><th class="l">column</th><th class="l">run</th><th>mean</th><th>CI</th><th class="l">n scored</th><th>vs {{ r.baseline }}</th><th>p adj</th><th>left out</th></tr>
{%- for col in rg.columns %}{% set vals = rg.values[col] %}{% for run, iv in vals.items() %}{% set d = rg.differences.get(col, {}).get(run) %}
<tr{% if loop.first %} class="first"{% endif %}>{% if loop.first %}<td class="text" rowspan="{{ vals|length }}"><b>{{ col }}</b><br><span class="muted">{{ rg.readings[col] }}</span></td>{% endif %}
<td class="run">{{ run }}</td><td>{{ iv.estimate|v }}</td><td class="ci">{{ iv|ci }}</td><td class="l">{{ rg.scored_note(col, run) }}</td>
{%- if d is none %}<td></td><td></td><td></td>{% else %}{% set left = rg.left_out[col].get(run, 0) %}
<td>{{ d.estimate|diff }} <span class="ci">{{ d|ci(True) }}</span></td><td>{{ rg.pvalues_adjusted[col].get(run)|p }}</td><td>{{ left }}{% if left %} (paired over {{ d.n }}){% endif %}</td>{% endif %}</tr>
{%- endfor %}{% endfor %}
</table></div>
<p class="note">{{ rg.note }}</p>
</section>
{%- endif %}

{%- if r.per_query %}{% set pq = r.per_query %}
<section id="rb-per-query">
<h2>Per question</h2>
<p class="lead">{% if pq.rows|length < pq.total %}The {{ pq.rows|length }} worst{% else %}All {{ pq.total }}, worst first,{% endif %} by {{ pq.by }}
of {{ pq.total }} questions (mean over the runs that scored it). &ndash; = not scored (hover for the reason).</p>
<div class="scroll"><table>
<tr><th class="l">question</th>{% for m in pq.metrics %}{% for run in pq.runs %}<th>{{ m }}<br>{{ run }}</th>{% endfor %}{% endfor %}</tr>
{%- for row in pq.rows %}
<tr><td class="text"><code>{{ row.query_id }}</code>{% if row.query %} {{ row.query }}{% endif %}</td>
{%- for m in pq.metrics %}{% for run in pq.runs %}{% set v = row.values[m][run] %}
{%- if v != v %}<td class="unscored" title="{{ row.reasons.get(m, {}).get(run, 'not scored') }}">&ndash;</td>{% else %}<td>{{ v|v }}</td>{% endif %}
{%- endfor %}{% endfor %}</tr>
{%- endfor %}
</table></div>
</section>
{%- endif %}

{%- if r.trend or r.trend_notes %}
<section id="rb-trend">
<h2>Trend over saved runs{% if r.trend_metric %}: {{ r.trend_metric }}{% endif %}</h2>
{%- if r.trend_notes %}<ul class="warnings">{% for n in r.trend_notes %}<li>{{ n }}</li>{% endfor %}</ul>{% endif %}
{%- set groups = trend_groups %}
{%- if plots.trend %}
<p class="lead"><label for="rb-trend-select">Run: </label><select id="rb-trend-select">
{%- if plots.trend %}<option value="all">all runs</option>{% endif %}
{%- for name, series in groups %}<option value="{{ loop.index0 }}">{{ name }}</option>{% endfor %}</select></p>
{%- endif %}
{% if plots.trend %}<figure data-series="all">{{ plots.trend }}</figure>{% endif %}
{%- for name, series in groups %}{% set svg = plots.get("trend." ~ loop.index0) %}{% if svg %}
<figure data-series="{{ loop.index0 }}">{{ svg }}</figure>{% endif %}{% endfor %}
{%- if plots.trend %}<script>{{ selector_js }}</script>{% endif %}
<details><summary>Values</summary>
<table><tr><th class="l">series</th><th class="l">saved</th><th>record</th><th>mean</th></tr>
{%- for s in r.trend %}{% for pt in s.points %}
<tr><td class="l">{{ s.label }}</td><td class="l">{{ pt.timestamp }}</td><td>{{ pt.record_id if pt.record_id is not none else "" }}</td><td>{{ pt.mean|v }}</td></tr>
{%- endfor %}{% endfor %}
</table></details>
</section>
{%- endif %}

{%- if r.queries %}
<section id="rb-queries">
<h2>Best and worst questions</h2>
{%- for rq in r.queries %}
<details{% if loop.first %} open{% endif %}><summary>{{ rq.run }}: best and worst by {{ rq.metric }}</summary>
<h3>Worst</h3>{{ query_table(rq.worst, True, rq.metric) }}
<h3>Best</h3>{{ query_table(rq.best, True, rq.metric) }}
</details>
{%- endfor %}
</section>
{%- endif %}

{%- if r.failed_top1 %}
<section id="rb-failed">
<h2>Failed questions</h2>
<p class="lead">A question fails when its top result is judged not relevant (label 0). A top result without a judgment is
counted apart: judge it before calling it a miss.</p>
<div class="scroll"><table>
<tr><th class="l">run</th><th>failed</th><th>share</th><th>top result unjudged</th><th>no result</th></tr>
{%- for f in r.failed_top1 %}
<tr><td class="run">{{ f.run }}</td><td>{{ f.count }}</td><td>{{ (f.count / f.num_queries if f.num_queries else none)|pct }}</td><td>{{ f.unjudged }}</td><td>{{ f.empty }}</td></tr>
{%- endfor %}
</table></div>
{%- for f in r.failed_top1 if f.items %}
<details{% if loop.first %} open{% endif %}><summary>{{ f.run }}: top result judged 0 ({{ f.count }}{% if f.count > f.items|length %}, first {{ f.items|length }} shown{% endif %})</summary>
{{ query_table(f.items, False, "") }}
</details>
{%- endfor %}
</section>
{%- endif %}

{%- if r.failures %}
<section id="rb-failures">
<h2>Failures</h2>
<p class="lead">A hit is a relevant chunk in the top {{ r.failures_k }}. A question can be in several lists.</p>
<div class="scroll"><table>
<tr><th class="l">run</th>{% for fl in r.failures[0].lists %}<th title="{{ fl.title }}">{{ fl.label }}</th>{% endfor %}</tr>
{%- for rf in r.failures %}
<tr><td class="l">{{ rf.run }}</td>{% for fl in rf.lists %}<td>{{ fl.count }}</td>{% endfor %}</tr>
{%- endfor %}
</table></div>
<p class="legend">{% for fl in r.failures[0].lists %}<b>{{ fl.label }}</b>: {{ fl.title }}{{ " · " if not loop.last }}{% endfor %}</p>
{%- for rf in r.failures %}{% for fl in rf.lists if fl.items %}
<details><summary>{{ rf.run }}: {{ fl.title }} ({{ fl.count }}{% if fl.count > fl.items|length %}, first {{ fl.items|length }} shown{% endif %})</summary>
{{ query_table(fl.items, False, "") }}
</details>
{%- endfor %}{% endfor %}
{%- if r.runs|length > 1 %}
<details{% if r.unsolved %} open{% endif %}><summary>No strategy solves: {{ r.unsolved|length }}</summary>
{% if r.unsolved %}{{ query_table(r.unsolved, False, "") }}{% else %}<p class="muted">Every question with a relevant chunk is solved by at least one strategy.</p>{% endif %}
</details>
{%- endif %}
</section>
{%- endif %}

<section id="rb-notes">
<h2>How to read this report</h2>
<ul class="notes">{% for n in r.notes %}<li>{{ n }}</li>{% endfor %}</ul>
</section>
<footer>Generated {{ r.generated_at }} by rankbridge {{ r.rankbridge_version }}. This file is self-contained: it loads
nothing from the network.</footer>
</div>
"""

#: The trend's run selector: shows the figure whose ``data-series`` is the selected option (``#trend=<i>`` in
#: the address picks one on load). It reads no data string and loads nothing; without scripts every figure
#: shows.
SELECTOR_JS = (
    "(function(){var s=document.getElementById('rb-trend-select');if(!s)return;"
    "function show(){var f=document.querySelectorAll('#rb-trend figure[data-series]');"
    "for(var i=0;i<f.length;i++){f[i].hidden=f[i].getAttribute('data-series')!==s.value;}}"
    "var m=/[#&]trend=([A-Za-z0-9]+)/.exec(location.hash);if(m){s.value=m[1];}"
    "if(s.selectedIndex<0){s.selectedIndex=0;}"
    "s.addEventListener('change',show);show();})();"
)

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="rankbridge {{ version }}">
<title>{{ title }}</title>
</head>
<body style="margin:0;background:#fff">
{{ body }}
</body>
</html>
"""


def _environment() -> Any:
    try:
        import jinja2
    except ImportError as exc:
        raise MissingExtraError("jinja2", "report", "The HTML report") from exc
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=False)
    env.filters["v"] = fmt_value
    env.filters["diff"] = fmt_diff
    env.filters["p"] = fmt_p
    env.filters["pct"] = fmt_pct
    env.filters["ci"] = lambda iv, sign=False: fmt_ci(iv, sign=sign)
    env.filters["capfirst"] = lambda s: s[:1].upper() + s[1:]
    return env


class _Plots(dict[str, Any]):
    """Plot lookup for the template: a missing plot is None (not an undefined-variable error)."""

    def __getattr__(self, name: str) -> Any:
        return self.get(name)


def render(report: Report, *, plots: bool = True, fragment: bool = False) -> str:
    """The report as HTML.

    Parameters
    ----------
    report:
        The report model.
    plots:
        Draw the plots (needs matplotlib); without, the tables alone.
    fragment:
        Return only the ``<div class="rb-report">`` (with its scoped style), for embedding in a page or a
        notebook, instead of a whole document.

    Raises
    ------
    MissingExtraError
        Jinja2 (or, with ``plots=True``, matplotlib) is not installed: ``pip install 'rankbridge[report]'``.
    """
    env = _environment()
    import markupsafe

    svgs: dict[str, Any] = {}
    if plots:
        # matplotlib writes the SVG and escapes every label in it: trusted markup.
        svgs = {name: markupsafe.Markup(svg) for name, svg in render_plots(report).items()}
    body = env.from_string(TEMPLATE).render(
        r=report,
        plots=_Plots(svgs),
        css=markupsafe.Markup(CSS),
        classes=RELEVANCE_CLASSES,
        trend_groups=trend_groups(report),
        partial=any(row.unscored or row.left_out for row in report.strategies),
        selector_js=markupsafe.Markup(SELECTOR_JS),
    )
    if fragment:
        return str(body)
    page = env.from_string(PAGE).render(
        title=report.title, version=report.rankbridge_version, body=markupsafe.Markup(body)
    )
    return str(page)
