#!/usr/bin/env node
// Program grader (JSON mode): score the agent's trajectory against the stimulus.
//
// Reads the GraderInput from $EVALUATE_GRADER_INPUT:
//   - keywords: `config.keywords` (an array) if given, else the `backticked` terms of the
//     stimulus prompt; the agent's final message should mention each of them;
//   - steps: the trajectory should take at most `config.max_steps` steps (default 20).
// score = 0.8 * (keywords mentioned / keywords) + 0.2 * min(1, max_steps / steps);
// score 0 without a final assistant message; passed when score >= 0.5.
"use strict";

const fs = require("fs");

const NAME = "trajectory-score";

function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map(text).join("\n");
  if (content && typeof content === "object") {
    if (typeof content.text === "string") return content.text;
    if ("content" in content) return text(content.content);
  }
  return "";
}

function promptOf(stimulus) {
  if (typeof stimulus === "string") return stimulus;
  if (stimulus && typeof stimulus === "object") {
    if ("prompt" in stimulus) return text(stimulus.prompt);
    if (Array.isArray(stimulus.messages)) return stimulus.messages.map((m) => text(m.content)).join("\n");
  }
  return "";
}

function stepsOf(trajectory) {
  if (Array.isArray(trajectory)) return trajectory;
  if (trajectory && typeof trajectory === "object") {
    for (const key of ["steps", "messages", "turns"]) {
      if (Array.isArray(trajectory[key])) return trajectory[key];
    }
  }
  return [];
}

function emit(result) {
  process.stdout.write(JSON.stringify({ name: NAME, kind: "code", ...result }) + "\n");
}

let input;
try {
  input = JSON.parse(fs.readFileSync(process.env.EVALUATE_GRADER_INPUT, "utf8"));
} catch (e) {
  console.error(`${NAME}: cannot read EVALUATE_GRADER_INPUT: ${e.message}`);
  emit({ passed: false, score: 0, evidence: `cannot read the grader input: ${e.message}` });
  process.exit(0);
}

const config = input.config && typeof input.config === "object" ? input.config : {};
const prompt = promptOf(input.stimulus);
const steps = stepsOf(input.trajectory);
const maxSteps = Number.isFinite(config.max_steps) && config.max_steps > 0 ? config.max_steps : 20;

let keywords = Array.isArray(config.keywords) ? config.keywords.map(String) : [];
if (keywords.length === 0) {
  keywords = [...prompt.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
}
keywords = [...new Set(keywords.map((k) => k.trim()).filter((k) => k))];

const finalStep = [...steps].reverse().find((s) => s && s.role === "assistant");
const finalText = finalStep ? text(finalStep.content).toLowerCase() : "";
// `add()` counts as mentioned when the message says `add`.
const mentioned = keywords.filter((k) => finalText.includes(k.replace(/\(\)$/, "").toLowerCase()));
const missing = keywords.filter((k) => !mentioned.includes(k));

const mention = keywords.length ? mentioned.length / keywords.length : 1;
const efficiency = steps.length ? Math.min(1, maxSteps / steps.length) : 0;
// No final assistant message: nothing was answered, score 0.
const score = finalStep ? Math.round((0.8 * mention + 0.2 * efficiency) * 10000) / 10000 : 0;
const passed = Boolean(finalStep) && score >= 0.5;

console.error(`${NAME}: ${steps.length} steps, keywords ${JSON.stringify(keywords)}, missing ${JSON.stringify(missing)}`);
emit({
  passed,
  score,
  evidence:
    `final message mentions ${mentioned.length} of ${keywords.length} keywords` +
    (missing.length ? ` (missing: ${missing.join(", ")})` : "") +
    `; ${steps.length} steps (max ${maxSteps})`,
  metadata: {
    steps: steps.length,
    max_steps: maxSteps,
    roles: steps.reduce((acc, s) => ((acc[s && s.role] = (acc[s && s.role] || 0) + 1), acc), {}),
    keywords,
    mentioned,
    missing,
    has_trajectory_b: "trajectoryB" in input,
  },
});
