"""``alfworld``: ALFWorld's text games behind the kit's contract, and household exported to them.

- :class:`AlfworldEnv` (:mod:`.env`): the ``alfworld`` package's text engine (TextWorld + PDDL)
  on ALFWorld's data (``$ALFWORLD_DATA``, filled by ``alfworld-download``) or on any folder of game
  files;
- :mod:`.export`: each household task written as an ALFWorld PDDL problem and game file for the
  package's own domain and grammar (how the adapter is tested without the download);
- :mod:`.parity`: household and the real engine played side by side (docs/alfworld-parity.md);
- :mod:`.goal`: progress towards a PDDL goal (the process reward).

Needs the extra: ``pip install -e .[alfworld]``. Importing this package does not import the engine.
"""

from rspo.core.envs.alfworld.env import PROCESS_REWARD_DOC, AlfworldEnv

__all__ = ["AlfworldEnv", "PROCESS_REWARD_DOC"]
