import { useEffect, useEffectEvent, useRef } from 'react';

/**
 * Shows the returned `<dialog>` modally while `open` (the browser keeps focus inside it, closes it
 * on Escape and, once closed, gives focus back to where it was), calling `onOpen` as it opens (to
 * reset state and focus the first control) and `onClosed` once it closed.
 */
export function useModal(open: boolean, { onOpen, onClosed }: { onOpen(): void; onClosed?(): void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const opened = useEffectEvent(onOpen);
  const closed = useEffectEvent(() => onClosed?.());
  useEffect(() => {
    const element = dialog.current;
    if (element === null) return;
    if (open && !element.open) {
      element.showModal();
      opened();
    } else if (!open && element.open) {
      element.close();
      closed();
    }
  }, [open]);
  return dialog;
}
