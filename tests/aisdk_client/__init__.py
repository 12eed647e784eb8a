"""The AI SDK's own client (the `ai` npm package, pinned) reading rxstream's "ai-sdk" output."""
