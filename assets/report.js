// quakecap report: each player's plots, drawn by uPlot from the JSON in the player's
// section (see src/sink/nethtml.rs, series_json). QC_OFFSET (seconds added to UTC) is set
// before this script. Times on the axes are the capture's clock, formatted as the page's
// text is (cut to the second); the legend gives seconds since the capture's start.
(function () {
  "use strict";
  var pad = function (n) { return (n < 10 ? "0" : "") + n; };
  function hms(t) {
    var s = Math.floor(t) + QC_OFFSET;
    s = ((s % 86400) + 86400) % 86400;
    return pad(Math.floor(s / 3600)) + ":" + pad(Math.floor(s / 60) % 60) + ":" + pad(s % 60);
  }
  var BLUE = "#1f77b4", RED = "#d62728", GREEN = "#2ca02c", LIGHT = "#9ec5e8", GREY = "#888";
  var INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400];
  var groups = {};

  function line(label, color, extra) {
    var s = { label: label, stroke: color, width: 1.5, points: { show: false },
      value: function (u, v) { return v == null ? "–" : (+v).toFixed(1); } };
    for (var k in extra) s[k] = extra[k];
    return s;
  }

  // The player's lag events shaded behind every plot, on the shared time axis.
  function shade(d) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox;
      ctx.save();
      for (var i = 0; i < d.lag.length; i++) {
        var e = d.lag[i];
        var a = u.valToPos(e[0], "x", true), z = u.valToPos(e[1], "x", true);
        a = Math.max(a, b.left); z = Math.min(Math.max(z, a + 2), b.left + b.width);
        if (z <= b.left || a >= b.left + b.width) continue;
        ctx.fillStyle = e[2] === 0 ? "rgba(224,49,49,0.18)" : "rgba(142,68,173,0.18)";
        ctx.fillRect(a, b.top, z - a, b.height);
      }
      ctx.restore();
    };
  }

  // The player's frags (green) and deaths (black), ticks at the top of the ping plot.
  function ticks(d) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox;
      ctx.save();
      ctx.lineWidth = 2 * devicePixelRatio;
      for (var i = 0; i < d.ev.length; i++) {
        var e = d.ev[i], x = u.valToPos(e[0], "x", true);
        if (x < b.left || x > b.left + b.width) continue;
        ctx.strokeStyle = e[1] ? GREEN : "#000";
        ctx.beginPath();
        ctx.moveTo(x, b.top);
        ctx.lineTo(x, b.top + 10 * devicePixelRatio);
        ctx.stroke();
      }
      ctx.restore();
    };
  }

  // The lagometer's columns: latency up from the middle line, loss down from it.
  function columns(d) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox, n = d.sx.length;
      var y0 = u.valToPos(0, "ms", true);
      ctx.save();
      for (var i = 0; i < n; i++) {
        var a = u.valToPos(d.sx[i], "x", true);
        var z = i + 1 < n ? u.valToPos(d.sx[i + 1], "x", true) : u.valToPos(d.end, "x", true);
        z = Math.max(z, a + 1);
        if (z < b.left || a > b.left + b.width) continue;
        a = Math.max(a, b.left); z = Math.min(z, b.left + b.width);
        if (d.sl[i] != null) {
          ctx.fillStyle = d.sc[i] ? "#e6c200" : "#00b000";
          var y = u.valToPos(d.sl[i], "ms", true);
          ctx.fillRect(a, Math.max(y, b.top), z - a, y0 - Math.max(y, b.top));
        }
        if (d.sp[i]) {
          ctx.fillStyle = "#e00000";
          var yl = u.valToPos(-d.sp[i], "lost", true);
          ctx.fillRect(a, y0, z - a, yl - y0);
        }
      }
      ctx.strokeStyle = "#555";
      ctx.lineWidth = devicePixelRatio;
      ctx.beginPath(); ctx.moveTo(b.left, y0); ctx.lineTo(b.left + b.width, y0); ctx.stroke();
      ctx.restore();
    };
  }

  function build(box) {
    if (box.dataset.built) return;
    box.dataset.built = "1";
    var d = JSON.parse(box.querySelector("script.series").textContent);
    // Arrays without any value are left out of the data: unknown all along.
    d.sx = d.sx || [];
    var n = Math.max(0, (d.ping || d.pc || d.ps || []).length);
    d.x = [];
    for (var i = 0; i < n; i++) d.x.push(Math.round((d.x0 + i * d.step) * 100) / 100);
    ["ping", "pmax", "lc", "ls", "jc", "js", "pc", "ps", "sn", "bc", "bs"].forEach(function (k) {
      d[k] = d[k] || d.x.map(function () { return null; });
    });
    ["sl", "sc", "sp"].forEach(function (k) {
      d[k] = d[k] || d.sx.map(function () { return k === "sc" ? 0 : null; });
    });
    var id = box.dataset.flow;
    var figs = {};
    box.querySelectorAll("figure").forEach(function (f) { figs[f.className] = f.querySelector(".plot"); });
    var width = Math.max(480, Math.floor(box.clientWidth || 900));
    var lo = Math.min(d.x.length ? d.x[0] : d.end, d.sx.length ? d.sx[0] : d.end);
    var hi = Math.max(d.end, lo + 1);
    var group = [];
    groups[id] = group;
    var syncing = false;
    var sync = uPlot.sync("flow-" + id);
    var xAxis = {
      space: 70,
      incrs: INCRS,
      splits: function (u, i, min, max, incr) {
        var base = d.t0 + QC_OFFSET, out = [];
        for (var v = Math.ceil((base + min) / incr) * incr; v <= base + max + 1e-9; v += incr) out.push(v - base);
        return out;
      },
      values: function (u, vals) { return vals.map(function (v) { return hms(d.t0 + v); }); },
    };
    function xSeries() {
      return { label: "time", value: function (u, v) {
        return v == null ? "–" : hms(d.t0 + v) + " (+" + v.toFixed(1) + " s)"; } };
    }
    function make(el, height, series, data, extra) {
      if (!el) return;
      var o = {
        width: width, height: height,
        cursor: { sync: { key: sync.key }, drag: { x: true, y: false } },
        scales: { x: { time: false, range: function (u, mn, mx) { return [mn, mx]; } } },
        axes: [xAxis, { size: 50 }],
        series: [xSeries()].concat(series),
        hooks: {
          drawClear: [shade(d)],
          setScale: [function (u, key) {
            if (key !== "x" || syncing) return;
            syncing = true;
            group.forEach(function (o) {
              if (o !== u) o.setScale("x", { min: u.scales.x.min, max: u.scales.x.max });
            });
            syncing = false;
          }],
        },
      };
      for (var k in extra) {
        if (k === "hooks") { for (var h in extra.hooks) o.hooks[h] = (o.hooks[h] || []).concat(extra.hooks[h]); }
        else o[k] = extra[k];
      }
      var u = new uPlot(o, data, el);
      u.setScale("x", { min: lo, max: hi });
      wheelAndPan(u);
      group.push(u);
    }
    var med = d.x.map(function () { return d.med; });
    if (!d.x.length) {
      box.insertAdjacentHTML("afterbegin", "<p class=\"note\">No interval of this connection to plot.</p>");
    }
    make(figs.ping, 190, [
      line("highest ms", LIGHT),
      line("mean ms", BLUE),
      line("median ms", GREY, { dash: [4, 4], width: 1 }),
    ], [d.x, d.pmax, d.ping, med], { hooks: { draw: [ticks(d)] } });
    var lossS = [line("c2s %", BLUE), line("s2c %", RED)], lossD = [d.x, d.lc, d.ls];
    if (d.rt) { lossS.push(line("server seq. missing %", GREY)); lossD.push(d.rt); }
    var jitS = [line("c2s ms", BLUE), line("s2c ms", RED)], jitD = [d.x, d.jc, d.js];
    var none = function (a) { return a.every(function (v) { return v == null; }); };
    if (none(d.jc) && none(d.js)) {
      jitS.push(line("ping spread ms", GREY));
      jitD.push(d.x.map(function (v, i) { return d.pmax[i] == null || d.ping[i] == null ? null : d.pmax[i] - d.ping[i]; }));
    }
    make(figs.loss, 150, lossS, lossD,
      { scales: { x: { time: false, range: function (u, mn, mx) { return [mn, mx]; } },
        y: { range: [0, 100] } } });
    make(figs.jitter, 150, jitS, jitD);
    make(figs.rates, 150, [line("client pkts/s", BLUE), line("server pkts/s", RED), line("snapshots/s", GREEN)],
      [d.x, d.pc, d.ps, d.sn]);
    make(figs.bandwidth, 150, [line("c2s kB/s", BLUE), line("s2c kB/s", RED)], [d.x, d.bc, d.bs]);
    var top = Math.max(50, Math.max.apply(null, d.sl.filter(function (v) { return v != null; }).concat([0]))) * 1.1;
    make(figs.lagometer, 170, [
      { label: "latency ms", scale: "ms", paths: function () { return null; }, points: { show: false },
        stroke: "#00b000", value: function (u, v) { return v == null ? "–" : v.toFixed(0); } },
      { label: "lost %", scale: "lost", paths: function () { return null; }, points: { show: false },
        stroke: "#e00000", value: function (u, v) { return v == null ? "–" : (-v).toFixed(0); } },
    ], [d.sx, d.sl, d.sp.map(function (v) { return v == null ? null : -v; })], {
      scales: {
        x: { time: false, range: function (u, mn, mx) { return [mn, mx]; } },
        ms: { range: [-0.45 * top, top] },
        lost: { range: [-100, 100 * 1.45 / 0.45 - 100] },
      },
      axes: [xAxis,
        { scale: "ms", size: 50, values: function (u, vs) { return vs.map(function (v) { return v >= 0 ? v : ""; }); } },
        { scale: "lost", side: 1, size: 45, grid: { show: false },
          values: function (u, vs) { return vs.map(function (v) { return v <= 0 ? -v + "%" : ""; }); } }],
      hooks: { draw: [columns(d)] },
    });
    var tools = box.querySelector(".tools");
    if (tools) tools.addEventListener("click", function (ev) {
      var t = ev.target, u = group[0];
      if (!u || t.tagName !== "BUTTON") return;
      var mn = u.scales.x.min, mx = u.scales.x.max, w = mx - mn;
      if (t.dataset.pan) { var s = +t.dataset.pan * w / 2; u.setScale("x", { min: mn + s, max: mx + s }); }
      else if (t.dataset.zoom) { var c = (mn + mx) / 2, h = w * +t.dataset.zoom / 2; u.setScale("x", { min: c - h, max: c + h }); }
      else u.setScale("x", { min: lo, max: hi });
    });
    // Double-click: back to the whole connection, for every plot of the player.
    group.forEach(function (u) {
      u.over.addEventListener("dblclick", function () { u.setScale("x", { min: lo, max: hi }); });
    });
  }

  // The wheel zooms about the pointer; Shift+drag pans.
  function wheelAndPan(u) {
    u.over.addEventListener("wheel", function (e) {
      e.preventDefault();
      var mn = u.scales.x.min, mx = u.scales.x.max;
      var at = u.posToVal(e.offsetX, "x"), f = e.deltaY < 0 ? 0.75 : 1 / 0.75;
      u.setScale("x", { min: at - (at - mn) * f, max: at + (mx - at) * f });
    }, { passive: false });
    u.over.addEventListener("mousedown", function (e) {
      if (!e.shiftKey) return;
      e.stopPropagation();
      e.preventDefault();
      var x0 = e.clientX, mn = u.scales.x.min, mx = u.scales.x.max;
      var per = (mx - mn) / u.over.clientWidth;
      function move(m) { var s = (x0 - m.clientX) * per; u.setScale("x", { min: mn + s, max: mx + s }); }
      function up() { document.removeEventListener("mousemove", move); document.removeEventListener("mouseup", up); }
      document.addEventListener("mousemove", move);
      document.addEventListener("mouseup", up);
    }, true);
  }

  var boxes = document.querySelectorAll(".charts");
  function buildAll() { boxes.forEach(build); }
  // Plots are drawn as they come near the view (a capture of hundreds of connections
  // stays quick to open), and all of them before printing.
  if ("IntersectionObserver" in window) {
    var io = new IntersectionObserver(function (es) {
      es.forEach(function (e) { if (e.isIntersecting) { io.unobserve(e.target); build(e.target); } });
    }, { rootMargin: "800px 0px" });
    boxes.forEach(function (b) { io.observe(b); });
  } else buildAll();
  window.addEventListener("beforeprint", function () {
    buildAll();
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  });
  window.quakecap = { groups: groups, buildAll: buildAll, hms: hms };
})();
