// What keeps a tool's answer inside an agent's context: tokens estimated as characters / 4, the
// text cut at whole lines with one line saying how many were left out and how to get them.
#pragma once

#include <cstddef>
#include <string>

namespace kprof::mcp {

constexpr std::size_t kDefaultTokenBudget = 4000;

// Tokens as characters / 4, rounded up (a rough, tokenizer-free estimate).
std::size_t estimated_tokens(const std::string& text);

// text when it fits budget_chars; else its first lines that fit, then
// "… N more rows; call again with detail=full" (N the lines left out, blank ones not counted).
// The result, that line included, is at most budget_chars long when budget_chars leaves room
// for the line itself.
std::string cut_to_budget(const std::string& text, std::size_t budget_chars);

}  // namespace kprof::mcp
