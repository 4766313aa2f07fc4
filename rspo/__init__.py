"""rspo — a tutorial and reproduction kit for RL of multi-turn LLM agents (Reward-Swap Policy Optimization).

`import rspo` is cheap: heavy libraries (torch, transformers, trl, peft) are imported where they are used.
"""

__version__ = "0.1.0"
