// The page's thread: starts the worker that runs the page's Python (www/worker.js: Pyodide, our wheels,
// webdemo.page), draws what it posts and sends it the user's requests. Nothing here computes: every run,
// check and chart is Python's, off this thread, so the page stays responsive during a long run.

const timings = {};
const started = performance.now();
const $ = (id) => document.getElementById(id);
// ?snapshot=off on the page starts Python without the site's memory snapshot (see worker.js)
const workerURL = new URL("worker.js", import.meta.url);
if (new URLSearchParams(location.search).get("snapshot") === "off") workerURL.searchParams.set("snapshot", "off");
const worker = new Worker(workerURL, { type: "module" });
const pending = new Map();
let nextId = 0;
let loadedText = null;   // the program text last loaded from an example (an edit makes the textarea differ)
let loading = Promise.resolve();
const counts = { runs: 0, allRuns: 0, loads: 0, transformerRuns: 0 };

function mark(name) {
  timings[name] = Math.round(performance.now() - started);
}

/** Send request ``action`` to the worker; resolves with its answer (parsed when it is JSON text). */
function call(action, args) {
  const id = ++nextId;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, action, args });
  });
}

async function ask(action, args) {
  return JSON.parse(await call(action, args));
}

window.atlasWeb = {
  ready: false,
  timings,
  worker,
  // the worker's Pyodide, as far as the tests need it: Python source in, the value of its last line out
  pyodide: {
    runPythonAsync: (source) => call("python", { source }),
    runPython: (source) => call("python-sync", { source }),
  },
};

function fail(message) {
  const box = $("boot-error");
  box.textContent = `The page could not start: ${message}`;
  box.hidden = false;
  $("boot-status").textContent = "Stopped.";
  document.body.dataset.state = "failed";
  window.atlasWeb.error = message;
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function cell(row, text, className) {
  row.appendChild(element("td", text, className));
}

function showError(message) {
  $("program-error").textContent = message || "";
  $("program-error").hidden = !message;
}

function showNote(message) {
  $("program-note").textContent = message || "";
  $("program-note").hidden = !message;
}

// ---- what the worker posts ---------------------------------------------------------------------------
const events = {
  examples(event) {
    for (const [name, description] of event.examples) {
      const option = element("option", `${name}: ${description}`);
      option.value = name;
      $("example").appendChild(option);
    }
    $("size").value = String(event.size);
    $("program").value = loadedText = event.text;
    const auto = element("option", "auto (probing the backends…)");
    auto.value = "auto";
    $("backend").appendChild(auto);
  },
  checks(event) {
    const body = $("checks-body");
    body.replaceChildren();
    for (const check of event.rows) {
      const row = element("tr");
      Object.assign(row.dataset, { example: check.example, digest: check.digest, ok: String(check.ok) });
      cell(row, check.example);
      cell(row, String(check.instructions));
      cell(row, (check.digest || "-").slice(0, 16), "digest");
      for (const [, same] of check.forms) cell(row, same ? "same" : "changed", same ? "ok" : "bad");
      cell(row, check.ok ? "ok" : check.summary, check.ok ? "ok" : "bad");
      body.appendChild(row);
    }
    $("checks-size").textContent = String(event.size);
    $("app").hidden = false;
    mark("firstResult");
  },
  choices(event) {
    const picker = $("backend");
    const status = $("backend-status");
    if (event.error) {
      showError(event.error);
      status.dataset.state = "failed";
      return;
    }
    const chosen = picker.value;
    picker.replaceChildren();
    status.replaceChildren();
    for (const entry of event.entries) {
      const option = element("option", entry.label);
      Object.assign(option, { value: entry.name, title: entry.explanation });
      picker.appendChild(option);
      const line = element("li", entry.explanation, entry.available ? "available" : "unavailable");
      line.dataset.backend = entry.name;
      status.appendChild(line);
    }
    if ([...picker.options].some((o) => o.value === chosen)) picker.value = chosen;
    status.dataset.state = "probed";
  },
  progress(event) {
    const target = { run: "run-progress", transformer: "transformer-progress" }[event.target] || "all-progress-text";
    $(target).textContent = event.text;
  },
  row(event) {
    const result = event.row;
    const row = element("tr");
    Object.assign(row.dataset, { example: result.example, backend: result.backend, check: result.check });
    cell(row, result.example);
    cell(row, result.backend);
    cell(row, result.check, result.ok ? "ok" : "bad");
    cell(row, result.launch);
    cell(row, result.detail);
    $("all-results-body").appendChild(row);
    $("all-progress").max = event.total;
    $("all-progress").value = event.done;
    $("all-progress-text").textContent = `${event.done} of ${event.total} runs done`;
  },
  charts(event) {
    showCharts(event.charts);
  },
};

function showCharts(charts) {
  const box = $("chart");
  box.replaceChildren();
  for (const [example, svg] of charts) {
    const figure = element("figure");
    figure.dataset.example = example;
    figure.innerHTML = svg;
    box.appendChild(figure);
  }
}

worker.onmessage = ({ data }) => {
  if (typeof data === "string") {
    const event = JSON.parse(data);
    events[event.event](event);
  } else if (data.reply !== undefined) {
    const { resolve, reject } = pending.get(data.reply);
    pending.delete(data.reply);
    if (data.error !== undefined) reject(new Error(data.error));
    else resolve(data.value);
  } else if (data.step !== undefined) {
    $("boot-progress").value = data.step;
    $("boot-status").textContent = data.text;
  } else if (data.mark) {
    mark(data.mark);
  } else if (data.boot) {
    // how Python started: "snapshot" (restored from the site's memory snapshot) or "normal", and why
    window.atlasWeb.boot = { source: data.boot, note: data.note };
    document.body.dataset.boot = data.boot;
  } else if (data.started) {
    $("boot-progress").value = 5;
    $("boot-status").textContent = "Ready.";
    $("boot").hidden = true;
    $("boot-timings").textContent =
      `Pyodide ${timings.pyodide} ms · wheels ${timings.wheels} ms · first result ${timings.firstResult} ms ` +
      `after the page started loading (Python runs in a Web Worker; ${window.atlasWeb.boot.note})`;
    Object.assign(window.atlasWeb, { ready: true, manifest: data.manifest });
    document.body.dataset.state = "ready";
  } else if (data.failed) {
    fail(data.failed);
  }
};
worker.onerror = (event) => fail(event.message || "the worker failed to start");

// ---- the user's requests -----------------------------------------------------------------------------
/** Load the chosen example's program at the chosen size; on a size change an edited program is kept. */
function loadProgram(sizeChanged) {
  const example = $("example").value;
  const size = $("size").value;
  loading = loading.then(async () => {   // in order: a size change after an example change sees its text
    try {
      const answer = await ask("program_text", { example, size });
      if (answer.input_error) {
        showError(answer.input_error);
        return;
      }
      showError("");
      if (sizeChanged && $("program").value !== loadedText) {
        showNote(`Your edited program is kept (size ${answer.size} applies to the example's buffers). ` +
                 `Choose the example again to load its program at size ${answer.size}.`);
        return;
      }
      showNote("");
      $("program").value = loadedText = answer.text;
    } catch (error) {
      showError(`internal error: ${error.message}`);
    } finally {
      $("program").dataset.loads = String(++counts.loads);   // tests wait for this count
    }
  });
}

async function run() {
  const result = $("result");
  $("run").disabled = true;
  result.textContent = "running…";
  result.dataset.check = "running";
  try {
    await loading;
    const answer = await ask("run", {
      text: $("program").value, example: $("example").value, size: $("size").value, backend: $("backend").value,
    });
    if (answer.input_error || answer.internal_error) {
      result.textContent = "not run";
      result.dataset.check = answer.input_error ? "input error" : "internal error";
      showError(answer.input_error || answer.internal_error);
      return;
    }
    result.textContent = answer.message;
    result.dataset.check = answer.status;
    showError(answer.error);
    $("timing").textContent = answer.timing;
    $("code").textContent = answer.code;
    $("outputs").textContent = answer.outputs.map(([name, values]) => `${name} = ${values}`).join("\n");
    $("outputs").hidden = answer.outputs.length === 0;
    showCharts(answer.charts);
  } catch (error) {
    result.textContent = "not run";
    result.dataset.check = "internal error";
    showError(`internal error: ${error.message}`);
  } finally {
    $("run-progress").textContent = "";
    result.dataset.runs = String(++counts.runs);   // tests wait for this count
    $("run").disabled = false;
  }
}

async function runAll() {
  const table = $("all-results");
  $("run-all").disabled = true;
  table.dataset.state = "running";
  $("all-results-body").replaceChildren();
  $("all-progress").value = 0;
  $("all-progress").hidden = false;
  try {
    await loading;
    const answer = await ask("run_all", { size: $("size").value });
    if (answer.input_error || answer.internal_error) {
      table.dataset.state = answer.input_error ? "input error" : "internal error";
      showError(answer.input_error || answer.internal_error);
      return;
    }
    showCharts(answer.charts);
    showError("");
    table.dataset.state = "done";
  } catch (error) {
    table.dataset.state = "internal error";
    showError(`internal error: ${error.message}`);
  } finally {
    $("all-progress").hidden = true;
    table.dataset.runs = String(++counts.allRuns);   // tests wait for this count
    $("run-all").disabled = false;
  }
}

async function generateTokens() {
  const result = $("transformer-result");
  const tokens = $("transformer-tokens");
  $("transformer-run").disabled = true;
  result.textContent = "generating…";
  result.dataset.state = "running";
  try {
    const answer = await ask("transformer", { backend: $("backend").value, tokens: $("transformer-count").value });
    if (answer.input_error || answer.internal_error) {
      result.textContent = answer.input_error || answer.internal_error;
      result.dataset.state = answer.input_error ? "input error" : "internal error";
      return;
    }
    result.textContent = answer.message;
    result.dataset.state = "done";
    Object.assign(result.dataset, { backend: answer.backend, tokensPerSecond: String(answer.tokens_per_second) });
    tokens.textContent = answer.tokens.join(" ");
    tokens.dataset.tokens = JSON.stringify(answer.tokens);
    tokens.hidden = false;
  } catch (error) {
    result.textContent = `internal error: ${error.message}`;
    result.dataset.state = "internal error";
  } finally {
    $("transformer-progress").textContent = "";
    result.dataset.runs = String(++counts.transformerRuns);   // tests wait for this count
    $("transformer-run").disabled = false;
  }
}

$("example").addEventListener("change", () => loadProgram(false));
$("transformer-run").addEventListener("click", generateTokens);
$("size").addEventListener("change", () => loadProgram(true));
$("run").addEventListener("click", run);
$("run-all").addEventListener("click", runAll);
