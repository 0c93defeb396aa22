/** The console's one escaping helper: every interpolation is text unless marked safe. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { escapeHtml, html, trusted } from "../../../src/console/html.js";

describe("console html tag", () => {
  it("escapes every interpolated string, in content and in attributes", () => {
    const evil = `"><script>alert('x')</script>&\``;
    const out = html`<a title="${evil}">${evil}</a>`.value;
    assert.equal(
      out,
      `<a title="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&#96;">&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&#96;</a>`,
    );
  });

  it("keeps nested html and trusted markup, joins lists, drops null/undefined/false", () => {
    const items = ["<b>", "c"].map((s) => html`<li>${s}</li>`);
    assert.equal(html`<ul>${items}</ul>${null}${undefined}${false}${0}${trusted("<br>")}`.value, "<ul><li>&lt;b&gt;</li><li>c</li></ul>0<br>");
  });

  it("a plain string is never markup, whatever it holds (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        const out = html`<p>${s}</p>`.value;
        const inner = out.slice(3, -4);
        assert.ok(!/[<>"'`]/.test(inner));
        // Escaping is reversible: nothing was lost.
        const back = inner
          .replace(/&#96;/g, "`")
          .replace(/&#39;/g, "'")
          .replace(/&quot;/g, '"')
          .replace(/&gt;/g, ">")
          .replace(/&lt;/g, "<")
          .replace(/&amp;/g, "&");
        assert.equal(back, s);
      }),
    );
  });

  it("escapeHtml handles every special character", () => {
    assert.equal(escapeHtml(`&<>"'\``), "&amp;&lt;&gt;&quot;&#39;&#96;");
  });
});
