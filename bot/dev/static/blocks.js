// Block Kit rendered the way Slack renders it, built as DOM nodes (never innerHTML), so
// text an agent wrote stays text. Knows the blocks Signoff sends: header, section (text,
// fields, accessory), context, actions (buttons, confirm dialogs), divider, and the inputs
// of a modal.
"use strict";

const SignoffBlocks = (() => {
  const ENTITIES = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'" };

  // The emoji shortcodes Slack would draw, drawn here with CSS (workspace.css), so no
  // glyph depends on the fonts of the machine showing the page; others stay as written.
  const EMOJI = {
    white_check_mark: "check", x: "cross", warning: "warn", rotating_light: "warn",
    hourglass: "dot grey", hourglass_flowing_sand: "dot amber", leftwards_arrow_with_hook: "dot grey",
    alarm_clock: "dot amber", mega: "dot amber", octagonal_sign: "dot red", eyes: "dot blue",
    repeat: "dot amber",
  };

  function decode(text) {
    return text.replace(/&(amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m]);
  }

  function emoji(m) {
    const kind = EMOJI[m[1]];
    if (!kind) return document.createTextNode(m[0]);
    const node = el("span", "emoji " + kind);
    node.title = m[0];
    node.setAttribute("aria-label", m[1].replace(/_/g, " "));
    node.dataset.emoji = m[1];
    return node;
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // <...> sequences: dates, mentions, links. Anything else stays literal.
  function special(inner, names) {
    const [target, label] = splitOnce(inner, "|");
    if (target.startsWith("!date^")) return el("span", "date", decode(label || target));
    if (target.startsWith("@")) return el("span", "mention", "@" + (names[target.slice(1)] || target.slice(1)));
    if (target.startsWith("#")) return el("span", "mention", "#" + (label || target.slice(1)));
    if (target.startsWith("!")) return el("span", "mention", "@" + target.slice(1).split("^")[0]);
    if (/^https?:\/\//.test(target)) {
      const link = el("a", "link", decode(label || target));
      link.href = decode(target);
      link.rel = "noopener noreferrer";
      link.target = "_blank";
      return link;
    }
    return document.createTextNode(decode("<" + inner + ">"));
  }

  function splitOnce(text, sep) {
    const at = text.indexOf(sep);
    return at < 0 ? [text, ""] : [text.slice(0, at), text.slice(at + 1)];
  }

  const STYLES = [
    { re: /^```([\s\S]*?)```/, make: (m) => el("pre", "code-block", decode(m[1])) },
    { re: /^`([^`\n]+)`/, make: (m) => el("code", "code", decode(m[1])) },
    { re: /^\*([^*\n]+)\*/, make: (m, names) => wrap("b", m[1], names) },
    { re: /^_([^_\n]+)_/, make: (m, names) => wrap("i", m[1], names) },
    { re: /^~([^~\n]+)~/, make: (m, names) => wrap("s", m[1], names) },
    { re: /^<([^<>\n]+)>/, make: (m, names) => special(m[1], names) },
    { re: /^:([a-z_]+):/, make: (m) => emoji(m) },
  ];

  function wrap(tag, inner, names) {
    const node = el(tag);
    node.appendChild(mrkdwn(inner, names));
    return node;
  }

  // Slack's mrkdwn, a subset: *bold*, _italic_, ~strike~, `code`, ```blocks```, <links>.
  function mrkdwn(text, names) {
    const out = document.createDocumentFragment();
    let plain = "";
    let i = 0;
    const flush = () => {
      if (plain) out.appendChild(document.createTextNode(decode(plain)));
      plain = "";
    };
    while (i < text.length) {
      const rest = text.slice(i);
      const boundary = i === 0 || /[\s(\[>]/.test(text[i - 1]) || rest[0] === "<" || rest[0] === "`";
      let matched = null;
      if (boundary && "`*_~<:".includes(rest[0])) {
        for (const style of STYLES) {
          const m = style.re.exec(rest);
          if (m) { matched = { node: style.make(m, names), length: m[0].length }; break; }
        }
      }
      if (matched) { flush(); out.appendChild(matched.node); i += matched.length; }
      else { plain += rest[0]; i += 1; }
    }
    flush();
    return out;
  }

  function textObject(obj, names) {
    if (!obj) return el("span");
    const span = el("span", "text " + obj.type);
    // Signoff's escaping already made untrusted <, > and & literal, verbatim or not.
    if (obj.type === "mrkdwn") span.appendChild(mrkdwn(obj.text || "", names));
    else span.textContent = obj.text || "";
    return span;
  }

  // Clicked, it reports its block's id with it, as Slack's payload carries it.
  function button(element, ctx, blockId) {
    const b = el("button", "block-button" + (element.style ? " " + element.style : ""));
    b.appendChild(textObject(element.text, ctx.names));
    b.dataset.actionId = element.action_id || "";
    b.dataset.value = element.value || "";
    b.addEventListener("click", () => ctx.onAction(element, blockId || ""));
    return b;
  }

  function section(block, ctx) {
    const node = el("div", "block section");
    const body = el("div", "section-body");
    if (block.text) body.appendChild(el("div", "section-text")).appendChild(textObject(block.text, ctx.names));
    if (block.fields) {
      const grid = el("div", "fields");
      for (const field of block.fields) grid.appendChild(el("div", "field")).appendChild(textObject(field, ctx.names));
      body.appendChild(grid);
    }
    node.appendChild(body);
    if (block.accessory && block.accessory.type === "button") node.appendChild(button(block.accessory, ctx, block.block_id));
    return node;
  }

  function input(block, ctx) {
    const node = el("label", "block input");
    node.appendChild(el("div", "input-label")).appendChild(textObject(block.label, ctx.names));
    const element = block.element || {};
    const field = el(element.multiline ? "textarea" : "input", "input-field");
    field.value = element.initial_value || "";
    if (element.placeholder) field.placeholder = element.placeholder.text || "";
    field.dataset.blockId = block.block_id || "";
    node.appendChild(field);
    if (block.hint) node.appendChild(el("div", "input-hint")).appendChild(textObject(block.hint, ctx.names));
    node.appendChild(el("div", "input-error"));
    return node;
  }

  function render(blocks, ctx) {
    const out = el("div", "blocks");
    for (const block of blocks || []) {
      let node;
      if (block.type === "header") node = el("div", "block header", block.text && block.text.text);
      else if (block.type === "section") node = section(block, ctx);
      else if (block.type === "divider") node = el("hr", "block divider");
      else if (block.type === "context") {
        node = el("div", "block context");
        for (const item of block.elements || []) {
          if (item.type === "image") continue; // images would be fetched from elsewhere
          node.appendChild(textObject(item, ctx.names));
        }
      } else if (block.type === "actions") {
        node = el("div", "block actions");
        for (const item of block.elements || []) if (item.type === "button") node.appendChild(button(item, ctx, block.block_id));
      } else if (block.type === "input") node = input(block, ctx);
      else node = el("div", "block unknown", "[" + block.type + " block]");
      if (block.block_id) node.dataset.blockId = block.block_id;
      out.appendChild(node);
    }
    return out;
  }

  return { render, mrkdwn, textObject, el };
})();
